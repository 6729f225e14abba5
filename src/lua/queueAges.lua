--[[ queueAges.lua - when the oldest ready job of a queue became ready, and when its oldest
  active job started, read in one atomic script (ferry_queue_ages; the rule and its
  approximations are in ferry/queue.h and docs/metrics.md). Read-only.

  A job's ready time, from its hash:
    due   = timestamp + opts.delay             (when it was first due; opts keeps the add's
                                                delay, the hash's `delay` is reset to 0 when
                                                a delayed job is promoted)
    back  = processedOn                        (it ran before and came back: retry, stall,
                                                throttle, moveToDelayed)
            + the smallest backoff of attempt atm, when every started attempt was counted
              (ats == atm >= 1: its last run ended in a failure that was retried)
    ready = max(due, back)
  Delayed jobs whose due time has passed (no worker promoted them yet) are ready from their
  due time (score / 4096).

  Bounded: the first and last `sample` members of wait, paused and prioritized and of
  active, and the first member of delayed: at most 8 * sample + 1 hashes read.

  KEYS: 1 wait 2 paused 3 prioritized 4 active 5 delayed
  ARGV: 1 key base "<prefix>:<queue>:"  2 now (ms)  3 sample (1..100)
  Returns {ready_found, ready_ms, active_found, active_ms} (ms since the epoch, 0 when not
  found). ]]

local base, now, sample = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
if not now or not sample or sample < 1 or sample > 100 then
  return redis.error_reply("queueAges: bad arguments")
end

-- The smallest delay BullMQ 6.7.0's built-in backoffs can give attempt `attempt` (jitter j
-- draws from [m * (1 - j), m)); custom strategies are unknown here: 0.
local function backoffMin(b, attempt)
  local kind, delay, jitter = "fixed", nil, 0
  if type(b) == "number" then
    delay = b
  elseif type(b) == "table" then
    kind = b.type
    delay = tonumber(b.delay)
    jitter = tonumber(b.jitter) or 0
  end
  if not delay or delay <= 0 then return 0 end
  if jitter < 0 then jitter = 0 elseif jitter > 1 then jitter = 1 end
  local m
  if kind == "fixed" then
    m = delay
  elseif kind == "exponential" then
    m = math.floor(2 ^ math.min(attempt - 1, 52) * delay + 0.5)
  else
    return 0
  end
  return math.floor(m * (1 - jitter))
end

local function readyAt(id)
  local h = redis.call("HMGET", base .. id, "timestamp", "opts", "processedOn", "ats", "atm",
    "attemptsMade")
  local ts = tonumber(h[1])
  if not ts then return nil end -- the hash is gone (or not a job)
  local opts = nil
  if h[2] then
    local ok, o = pcall(cjson.decode, h[2])
    if ok and type(o) == "table" then opts = o end
  end
  local ready = ts
  local d = opts and tonumber(opts.delay)
  if d and d > 0 then ready = ts + d end
  local p = tonumber(h[3])
  if p then
    local back = p
    local ats, atm = tonumber(h[4]), tonumber(h[5]) or tonumber(h[6]) or 0
    if ats and atm >= 1 and ats == atm and opts then back = p + backoffMin(opts.backoff, atm) end
    if back > ready then ready = back end
  end
  return ready
end

local best = nil
local function consider(ids)
  for _, id in ipairs(ids) do
    local r = readyAt(id)
    if r and (not best or r < best) then best = r end
  end
end

-- Both ends of a list or sorted set: `sample` members each (all of them when that many or
-- fewer).
local function ends(key, isList)
  local n = isList and redis.call("LLEN", key) or redis.call("ZCARD", key)
  local range = isList and "LRANGE" or "ZRANGE"
  if n <= 2 * sample then return redis.call(range, key, 0, -1) end
  local ids = redis.call(range, key, 0, sample - 1)
  for _, id in ipairs(redis.call(range, key, -sample, -1)) do ids[#ids + 1] = id end
  return ids
end

consider(ends(KEYS[1], true))
consider(ends(KEYS[2], true))
consider(ends(KEYS[3], false))
local first = redis.call("ZRANGE", KEYS[5], 0, 0, "WITHSCORES")
if first[2] then
  local due = math.floor(tonumber(first[2]) / 4096)
  if due <= now and (not best or due < best) then best = due end
end

local oldestActive = nil
for _, id in ipairs(ends(KEYS[4], true)) do
  local p = tonumber(redis.call("HGET", base .. id, "processedOn"))
  if p and (not oldestActive or p < oldestActive) then oldestActive = p end
end

return {best and 1 or 0, best or 0, oldestActive and 1 or 0, oldestActive or 0}
