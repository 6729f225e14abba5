--[[ retryJob.lua - active job -> wait/prioritized at once (BullMQ 6.7.0 retryJob): a failed
  attempt retried without backoff delay. Promotes due delayed jobs first, as BullMQ does.

  KEYS: 1 active 2 wait 3 meta 4 events 5 delayed 6 prioritized 7 pc 8 marker 9 stalled
  ARGV: 1 base  2 now (ms)  3 push command (LPUSH, or RPUSH for lifo)  4 jobId  5 token
        6.. field, value pairs HSET on the job first (failedReason, stacktrace; may be none)
  Returns 0, -1 job missing, -2 lock missing, -6 lock owned by another token,
  -3 job not in active. ]]
--@include common.lua

local base, nowStr, pushCmd, id, token = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
if pushCmd ~= "RPUSH" then pushCmd = "LPUSH" end
ferryPromoteDelayed(base, tonumber(nowStr), ferryPausedOrMaxed(KEYS[3], KEYS[1]))

local jobKey = base .. id
if redis.call("EXISTS", jobKey) == 0 then return -1 end
local rc = ferryReleaseLock(jobKey, KEYS[9], token, id)
if rc < 0 then return rc end
if #ARGV >= 7 then redis.call("HSET", jobKey, unpack(ARGV, 6)) end
if redis.call("LREM", KEYS[1], -1, id) < 1 then return -3 end

local priority = tonumber(redis.call("HGET", jobKey, "priority")) or 0
-- re-evaluated now that the job left active (it may have been the one making it maxed)
local blocked = ferryPausedOrMaxed(KEYS[3], KEYS[1])
if priority == 0 then
  redis.call(pushCmd, KEYS[2], id)
else
  redis.call("ZADD", KEYS[6], ferryPrioScore(priority, KEYS[7]), id)
end
if not blocked then redis.call("ZADD", KEYS[8], 0, "0") end
redis.call("HINCRBY", jobKey, "atm", 1)
redis.call("XADD", KEYS[4], "MAXLEN", "~", ferryMaxEvents(KEYS[3]), "*", "event", "waiting",
  "jobId", id, "prev", "active")
return 0
