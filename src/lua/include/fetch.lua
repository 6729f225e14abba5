-- fetch.lua: the batched fetch shared by moveToActive.lua and moveToFinished.lua
-- (spliced in after common.lua by "--@include fetch.lua").

-- Returns jobs, ttl, nextDelayed, hadResult (false only when nothing at all was found:
-- not rate limited, not paused/maxed, no job, no delayed job - BullMQ's "drained" case).
-- ttl > 0 means rate limited for that long; unlike BullMQ it is also returned with jobs
-- when this fetch used up the limiter's window, so the worker waits out the window at
-- once instead of asking again just to be told (and the "0" marker it would pop stays for
-- others).
-- Jobs are taken in BullMQ's order (wait tail first, then prioritized by score) and moved
-- to the head of active exactly as n single RPOPLPUSH/ZPOPMIN+LPUSH would; with popMany
-- ("1", Redis >= 6.2) the pops use RPOP/ZPOPMIN with a count instead of one call per job.
-- Marker: BullMQ re-adds "0" after every fetch that took a job. Here it is re-added only
-- when wait or prioritized may still hold jobs; when this fetch emptied both, a "0" left
-- in the marker is stale and is removed instead (what a worker popping it and finding
-- nothing would do), so an idle worker blocks on BZPOPMIN instead of waking for nothing.
-- meta: HMGET meta paused concurrency max duration, when the caller has read it already
-- (moveToFinished reads meta once per call), else nil.
local function ferryFetchJobs(k, base, nowStr, n, tokPrefix, tokStart, lockDuration, workerName,
                              wMax, wDur, popMany, meta)
  local now = tonumber(nowStr)
  if not meta then meta = redis.call("HMGET", k.meta, "paused", "concurrency", "max", "duration") end
  local conc = tonumber(meta[2])
  local blocked = false
  if meta[1] then
    blocked = true
  elseif conc then
    local room = conc - redis.call("LLEN", k.active)
    if room <= 0 then blocked = true elseif room < n then n = room end
  end
  ferryPromoteDelayed(base, now, blocked)

  local maxJobs = tonumber(meta[3] or wMax)
  local dur = tonumber(wDur) or tonumber(meta[4])
  local jobs = {}
  if maxJobs then
    local used = tonumber(redis.call("GET", k.limiter)) or 0
    if maxJobs <= used then
      local pttl = redis.call("PTTL", k.limiter)
      if pttl == 0 then redis.call("DEL", k.limiter) end
      if pttl > 0 then return jobs, pttl, 0, true end
      used = 0
    end
    if maxJobs - used < n then n = maxJobs - used end
  end
  if blocked then return jobs, 0, 0, true end

  -- take up to n ids
  local ids = {}
  local exhausted = false -- wait and prioritized are both empty now
  if popMany == "1" and n > 1 then
    local popped = redis.call("RPOP", k.wait, n)
    local npopped = popped and #popped or 0
    if popped then
      for _, id in ipairs(popped) do
        -- pre-v5 markers left in wait are dropped, never processed
        if string.sub(id, 1, 2) ~= "0:" then ids[#ids + 1] = id end
      end
      if #ids > 0 then redis.call("LPUSH", k.active, unpack(ids)) end
    end
    if #ids < n then
      local want = n - #ids
      local top = redis.call("ZPOPMIN", k.prioritized, want)
      local fromPrio = {}
      for i = 1, #top, 2 do fromPrio[#fromPrio + 1] = top[i] end
      if #fromPrio > 0 then redis.call("LPUSH", k.active, unpack(fromPrio)) end
      if #fromPrio < want then
        redis.call("DEL", k.pc)
        exhausted = npopped < n
      end
      for _, id in ipairs(fromPrio) do ids[#ids + 1] = id end
    end
  else
    while #ids < n do
      local id = redis.call("RPOPLPUSH", k.wait, k.active)
      if id and string.sub(id, 1, 2) == "0:" then
        redis.call("LREM", k.active, 1, id)
        id = redis.call("RPOPLPUSH", k.wait, k.active)
      end
      if not id then
        local top = redis.call("ZPOPMIN", k.prioritized)
        if top[1] then
          id = top[1]
          redis.call("LPUSH", k.active, id)
        else
          redis.call("DEL", k.pc)
          exhausted = true
        end
      end
      if not id then break end
      ids[#ids + 1] = id
    end
  end

  local counted = 0
  local limitTtl = 0
  for i, id in ipairs(ids) do
    local jobKey = base .. id
    -- (a whole number below 10^14 concatenates as its digits, without string.format)
    redis.call("SET", jobKey .. ":lock", tokPrefix .. (tokStart + i - 1), "PX", lockDuration)
    redis.call("XADD", k.events, "*", "event", "active", "jobId", id, "prev", "waiting")
    -- HGETALL first, then one HSET for processedOn, ats (+1, as HINCRBY) and pb; the
    -- returned hash is patched to the values just written
    local h = redis.call("HGETALL", jobKey)
    local ats, iAts, iPo, iPb, defa = 0, nil, nil, nil, false
    for f = 1, #h, 2 do
      local name = h[f]
      if name == "ats" then
        iAts = f + 1
        ats = tonumber(h[f + 1]) or 0
      elseif name == "processedOn" then
        iPo = f + 1
      elseif name == "pb" then
        iPb = f + 1
      elseif name == "defa" then
        defa = true
      end
    end
    -- ats as text; "1" (a job's first start, the common case) needs no number formatting
    if iAts then ats = tostring(ats + 1) else ats = "1" end
    if workerName ~= "" then
      redis.call("HSET", jobKey, "processedOn", nowStr, "ats", ats, "pb", workerName)
      if iPb then h[iPb] = workerName else h[#h + 1] = "pb"; h[#h + 1] = workerName end
    else
      redis.call("HSET", jobKey, "processedOn", nowStr, "ats", ats)
    end
    if iAts then h[iAts] = ats else h[#h + 1] = "ats"; h[#h + 1] = ats end
    if iPo then h[iPo] = nowStr else h[#h + 1] = "processedOn"; h[#h + 1] = nowStr end
    jobs[#jobs + 1] = id
    jobs[#jobs + 1] = h
    if not defa then counted = counted + 1 end
  end
  -- rate limiter: jobs with a deferred failure are not counted (v6)
  if maxJobs and counted > 0 then
    local used = redis.call("INCRBY", k.limiter, counted)
    if used == counted and dur then
      redis.call("PEXPIRE", k.limiter, math.floor(math.abs(dur)))
    end
    if used >= maxJobs then
      local pttl = redis.call("PTTL", k.limiter)
      if pttl > 0 then limitTtl = pttl end
    end
  end

  if exhausted then
    redis.call("ZREM", k.marker, "0")
  elseif #ids > 0 then
    redis.call("ZADD", k.marker, "0", "0")
  end
  if #ids > 0 then return jobs, limitTtl, 0, true end
  local first = redis.call("ZRANGE", k.delayed, "0", "0", "WITHSCORES")
  if first[2] then return jobs, 0, tonumber(first[2]) / 4096, true end
  return jobs, 0, 0, false
end
