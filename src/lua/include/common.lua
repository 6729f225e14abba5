-- common.lua: helpers shared by ferry's scripts (spliced in by "--@include common.lua").
-- Keys are built from the queue base "<prefix>:<queue>:" exactly as BullMQ 6.7.0 does.

-- meta.opts.maxLenEvents, written with the default 10000 when missing (BullMQ prologue).
local function ferryMaxEvents(metaKey)
  local m = redis.call("HGET", metaKey, "opts.maxLenEvents")
  if not m then
    m = 10000
    redis.call("HSET", metaKey, "opts.maxLenEvents", m)
  end
  return m
end

-- paused (meta.paused) or maxed (meta.concurrency reached by LLEN active).
local function ferryPausedOrMaxed(metaKey, activeKey)
  local a = redis.call("HMGET", metaKey, "paused", "concurrency")
  if a[1] then return true end
  if a[2] and redis.call("LLEN", activeKey) >= tonumber(a[2]) then return true end
  return false
end

-- delayed zset score: dueMs * 4096 + sequence among jobs due in the same ms.
local function ferryDelayedScore(delayedKey, dueMs)
  local lo = dueMs * 4096
  local hi = lo + 4095
  local top = redis.call("ZREVRANGEBYSCORE", delayedKey, hi, lo, "WITHSCORES", "LIMIT", 0, 1)
  if top[2] then
    local s = tonumber(top[2])
    if s >= hi then return hi end
    return s + 1
  end
  return lo
end

-- marker "1" = next delayed due time (ms, may carry a fraction like BullMQ's).
local function ferrySetDelayMarker(markerKey, delayedKey)
  local first = redis.call("ZRANGE", delayedKey, 0, 0, "WITHSCORES")
  if first[2] then
    redis.call("ZADD", markerKey, tonumber(first[2]) / 4096, "1")
  end
end

-- prioritized zset score: priority * 2^32 + (INCR pc) mod 2^32.
local function ferryPrioScore(priority, pcKey)
  local n = redis.call("INCR", pcKey)
  return priority * 4294967296 + n % 4294967296
end

-- Lock check for finishing/retrying a job: 0 ok (lock released), -6 owned by another
-- token, -2 missing. Token "0" skips the check (BullMQ convention).
local function ferryReleaseLock(jobKey, stalledKey, token, jobId)
  if token == "0" then return 0 end
  local cur = redis.call("GET", jobKey .. ":lock")
  if cur == token then
    redis.call("DEL", jobKey .. ":lock")
    redis.call("SREM", stalledKey, jobId)
    return 0
  end
  if cur then return -6 end
  return -2
end

-- Delete a job hash and its sub-keys (not :lock), as BullMQ's removal does; returns how
-- many of those keys existed.
local function ferryWipeJob(jobKey)
  return redis.call("DEL", jobKey, jobKey .. ":logs", jobKey .. ":dependencies",
    jobKey .. ":processed", jobKey .. ":failed", jobKey .. ":unsuccessful")
end

-- Promote due delayed jobs (score <= (now+1)*4096-1, at most 1000) into wait/prioritized.
-- base = "<prefix>:<queue>:". Returns the number promoted.
local function ferryPromoteDelayed(base, now, blocked)
  local delayedKey = base .. "delayed"
  -- bounds as strings: a Lua number argument costs Redis a "%.17g" snprintf
  local due = redis.call("ZRANGEBYSCORE", delayedKey, "0", string.format("%d", (now + 1) * 4096 - 1),
    "LIMIT", "0", "1000")
  if #due == 0 then return 0 end
  redis.call("ZREM", delayedKey, unpack(due))
  for _, id in ipairs(due) do
    local jobKey = base .. id
    local p = tonumber(redis.call("HGET", jobKey, "priority")) or 0
    if p == 0 then
      redis.call("LPUSH", base .. "wait", id)
    else
      redis.call("ZADD", base .. "prioritized", ferryPrioScore(p, base .. "pc"), id)
    end
    redis.call("XADD", base .. "events", "*", "event", "waiting", "jobId", id, "prev", "delayed")
    redis.call("HSET", jobKey, "delay", 0)
  end
  if not blocked then redis.call("ZADD", base .. "marker", "0", "0") end
  return #due
end
