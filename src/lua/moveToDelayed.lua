--[[ moveToDelayed.lua - active job -> delayed (BullMQ 6.7.0 moveToDelayed): backoff retry,
  or "retry later" without spending an attempt (skipAttempt = 1). The caller fetches the
  next jobs in its own batch, so there is no fetchNext here.

  KEYS: 1 marker 2 active 3 delayed 4 events 5 meta 6 stalled
  ARGV: 1 base  2 now (ms)  3 jobId  4 token  5 delay (ms, >= 0)  6 skipAttempt ("0"|"1")
        7.. field, value pairs HSET on the job first (failedReason, stacktrace; may be none)
  Returns 0, -1 job missing, -2 lock missing, -6 lock owned by another token,
  -3 job not in active. ]]
--@include common.lua

local base, nowStr, id, token = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local jobKey = base .. id
if redis.call("EXISTS", jobKey) == 0 then return -1 end
local rc = ferryReleaseLock(jobKey, KEYS[6], token, id)
if rc < 0 then return rc end
if #ARGV >= 8 then redis.call("HSET", jobKey, unpack(ARGV, 7)) end
if redis.call("LREM", KEYS[2], -1, id) < 1 then return -3 end

local delay = tonumber(ARGV[5])
local due = tonumber(nowStr)
if delay > 0 then due = due + delay end
local score = ferryDelayedScore(KEYS[3], due)
if ARGV[6] == "0" then redis.call("HINCRBY", jobKey, "atm", 1) end
redis.call("HSET", jobKey, "delay", ARGV[5])
local maxEvents = ferryMaxEvents(KEYS[5])
redis.call("ZADD", KEYS[3], score, id)
redis.call("XADD", KEYS[4], "MAXLEN", "~", maxEvents, "*", "event", "delayed", "jobId", id,
  "delay", due)
ferrySetDelayMarker(KEYS[1], KEYS[3])
return 0
