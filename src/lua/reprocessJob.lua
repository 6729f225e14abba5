--[[ reprocessJob.lua - one failed or completed job back to waiting, with the effects of
  BullMQ 6.7.0's Job.retry(state, {resetAttemptsMade, resetAttemptsStarted}) (its script
  of the same name): the job leaves its finished set, loses finishedOn, processedOn and
  failedReason / returnvalue (atm and ats too when asked; stacktrace stays), goes to the
  head of wait (the tail when its opts say lifo) or, with a priority, to prioritized with a
  fresh counter; marker "0" unless the queue is paused or at its global concurrency; a flow
  child becomes its parent's pending dependency again; event `waiting {jobId, prev}`.
  Unlike Node, the state may be left open ("") and is then found here: failed, then completed.

  KEYS: 1 job hash  2 meta
  ARGV: 1 base "<prefix>:<queue>:"  2 job id  3 state: "failed", "completed" or ""
        4 "1" = reset atm  5 "1" = reset ats
  Returns the state the job left ("failed" / "completed"), -1 no such job,
  -3 not in that state (or in neither). ]]
--@include common.lua
--@include requeue.lua

local jobKey, metaKey = KEYS[1], KEYS[2]
local base, id, want = ARGV[1], ARGV[2], ARGV[3]

if redis.call("EXISTS", jobKey) == 0 then return -1 end
local from
if want == "failed" or want == "completed" then
  if redis.call("ZREM", base .. want, id) == 1 then from = want end
elseif want == "" then
  for _, s in ipairs({"failed", "completed"}) do
    if redis.call("ZREM", base .. s, id) == 1 then
      from = s
      break
    end
  end
end
if not from then return -3 end

local extra = {}
if ARGV[4] == "1" then extra[#extra + 1] = "atm" end
if ARGV[5] == "1" then extra[#extra + 1] = "ats" end
ferryForgetFinish(jobKey, from, extra)

local blocked = ferryPausedOrMaxed(metaKey, base .. "active")
local priority = tonumber(redis.call("HGET", jobKey, "priority")) or 0
if priority == 0 then
  redis.call(ferryPushFor(jobKey), base .. "wait", id)
else
  redis.call("ZADD", base .. "prioritized", ferryPrioScore(priority, base .. "pc"), id)
end
if not blocked then redis.call("ZADD", base .. "marker", 0, "0") end
ferryChildPendingAgain(jobKey, from)
redis.call("XADD", base .. "events", "MAXLEN", "~", ferryMaxEvents(metaKey), "*", "event",
  "waiting", "jobId", id, "prev", from)
return from
