--[[ throttleJob.lua - FERRY_THROTTLED with a worker limiter, in one atomic step: BullMQ
  6.7.0's queue.rateLimit(delay) (the limiter key set to 9007199254740991 with PX delay, so
  every worker with a limiter - its own or the queue's meta max - fetches nothing until it
  expires) followed by moveJobFromActiveToWait (the job back to the front of wait without
  spending an attempt; `ats` was counted by the fetch).
  Differences from the two BullMQ calls, both deliberate:
  * a manual limit already set for longer is not shortened (two workers told different
    Retry-After values keep the longer one; BullMQ's plain SET would let the last win);
  * the limiter is set even when the job's finish is refused (-1/-2/-3/-6): the service
    throttled us whoever owns the job now - as in BullMQ, where rateLimit() comes first.
  The marker "0" is added unless paused/maxed for a prioritized job too (BullMQ adds it only
  for wait), so an idle worker without a limiter is not left asleep next to a runnable job.

  KEYS: 1 active 2 wait 3 stalled 4 meta 5 limiter 6 prioritized 7 marker 8 events
  ARGV: 1 base  2 jobId  3 token  4 delay (ms, >= 1)
        5.. field, value pairs HSET on the job first (failedReason; may be none)
  Returns {code, pttl}: code 0, -1 job missing, -2 lock missing, -6 lock owned by another
  token, -3 job not in active; pttl = the limiter's PTTL (0 when none). ]]
--@include common.lua

local base, id, token = ARGV[1], ARGV[2], ARGV[3]
local delay = math.floor(tonumber(ARGV[4]))
if delay < 1 then delay = 1 end

local MANUAL = "9007199254740991" -- Number.MAX_SAFE_INTEGER, as queue.rateLimit writes it
if not (redis.call("GET", KEYS[5]) == MANUAL and redis.call("PTTL", KEYS[5]) >= delay) then
  redis.call("SET", KEYS[5], MANUAL, "PX", delay)
end
local function limiterTtl()
  local p = redis.call("PTTL", KEYS[5])
  if p > 0 then return p end
  return 0
end

local jobKey = base .. id
if redis.call("EXISTS", jobKey) == 0 then return {-1, limiterTtl()} end
local rc = ferryReleaseLock(jobKey, KEYS[3], token, id)
if rc < 0 then return {rc, limiterTtl()} end
if #ARGV >= 6 then redis.call("HSET", jobKey, unpack(ARGV, 5)) end
if redis.call("LREM", KEYS[1], 1, id) < 1 then return {-3, limiterTtl()} end

local blocked = ferryPausedOrMaxed(KEYS[4], KEYS[1])
local priority = tonumber(redis.call("HGET", jobKey, "priority")) or 0
if priority > 0 then
  -- front of its priority: counter 0
  redis.call("ZADD", KEYS[6], priority * 4294967296, id)
else
  redis.call("RPUSH", KEYS[2], id)
end
if not blocked then redis.call("ZADD", KEYS[7], 0, "0") end
redis.call("XADD", KEYS[8], "MAXLEN", "~", ferryMaxEvents(KEYS[4]), "*", "event", "waiting",
  "jobId", id, "prev", "active")
return {0, limiterTtl()}
