-- scheduler.lua: helpers shared by the job scheduler scripts (upsertJobScheduler,
-- nextSchedulerIteration). Spliced in after common.lua, whose ferry* helpers it uses.

-- Millis as an integer string: the id of an iteration is "repeat:<id>:<millis>" and must be
-- spelled the same by every producer (Node concatenates Lua numbers, which for 13-digit
-- millis gives the same digits).
local function schedMs(n)
  return string.format("%d", n)
end

-- Next run of an `every` scheduler, as BullMQ 6.7.0 computes it. prev = millis of the current
-- iteration (nil for a new scheduler); offset = the scheduler's offset (may be nil/0);
-- startDate only counts for a new scheduler. Returns next millis and the offset to keep.
local function schedEveryNext(prev, every, now, offset, startDate)
  offset = tonumber(offset)
  local nxt
  if not prev then
    if startDate then
      nxt = tonumber(startDate)
      if nxt <= now then nxt = now end
    elseif offset and offset > 0 then
      nxt = math.floor(now / every) * every + offset
      if nxt <= now then nxt = nxt + every end
    else
      nxt = now
    end
  else
    nxt = prev + every
    if nxt < now then
      -- missed ticks are skipped: jump to the first offset-aligned slot after now
      local aligned = math.floor(now / every) * every + (offset or 0)
      if aligned <= now then nxt = aligned + every else nxt = aligned end
    end
  end
  if not offset or offset == 0 then
    offset = nxt - math.floor(nxt / every) * every
  end
  return math.floor(nxt), math.floor(offset)
end

-- The iteration's opts: the client sends them without jobId and delay, which only this script
-- knows (the `every` slot depends on Redis state). `opts` is compact JSON text of an object.
local function schedOptsWith(opts, jobId, delay)
  local body = string.sub(opts, 1, -2)
  if body ~= "{" then body = body .. "," end
  return body .. '"jobId":' .. cjson.encode(jobId) .. ',"delay":' .. schedMs(delay) .. "}"
end

-- Store an iteration job and enqueue it like BullMQ's storeAndEnqueueJob: hash (with rjk),
-- `added`, then delayed (`delayed` event + delay marker) or prioritized / wait (`waiting`
-- event + marker unless paused or maxed). base = "<prefix>:<queue>:".
local function schedAddIteration(base, jobId, sid, name, data, opts, now, delay, priority, lifo,
                                 maxEvents)
  local eventsKey = base .. "events"
  rcall("HSET", base .. jobId, "name", name, "data", data, "opts", opts, "timestamp", now,
    "delay", delay, "priority", priority, "rjk", sid)
  rcall("XADD", eventsKey, "*", "event", "added", "jobId", jobId, "name", name)
  if delay > 0 then
    local delayedKey = base .. "delayed"
    local due = now + delay
    rcall("ZADD", delayedKey, ferryDelayedScore(delayedKey, due), jobId)
    rcall("XADD", eventsKey, "MAXLEN", "~", maxEvents, "*", "event", "delayed", "jobId", jobId,
      "delay", due)
    ferrySetDelayMarker(base .. "marker", delayedKey)
  else
    local blocked = ferryPausedOrMaxed(base .. "meta", base .. "active")
    if priority > 0 then
      rcall("ZADD", base .. "prioritized", ferryPrioScore(priority, base .. "pc"), jobId)
    elseif lifo then
      rcall("RPUSH", base .. "wait", jobId)
    else
      rcall("LPUSH", base .. "wait", jobId)
    end
    if not blocked then rcall("ZADD", base .. "marker", 0, "0") end
    rcall("XADD", eventsKey, "MAXLEN", "~", maxEvents, "*", "event", "waiting", "jobId", jobId)
  end
end
