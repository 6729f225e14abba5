--[[ moveJobsToWait.lua - one chunk of Queue.retryJobs({state}) or Queue.promoteJobs() with
  BullMQ 6.7.0's effects (its script of the same name): the `count` oldest jobs of the
  failed, completed or delayed set with a score from 0 to maxScore go to the head of wait,
  oldest first (so the oldest runs first) - whatever their priority or lifo, as BullMQ does;
  failed / completed jobs lose finishedOn, processedOn and failedReason / returnvalue (the
  attempt counters and stacktrace stay) and flow children become pending dependencies of
  their parents again; delayed jobs keep their `delay` field (BullMQ does not reset it
  here, unlike a single promote). Events `waiting {jobId, prev}` in that order; marker "0"
  unless the queue is paused or at its global concurrency. Nothing is written when no job
  matched.

  KEYS: 1 meta
  ARGV: 1 base  2 state: "failed", "completed" or "delayed"  3 maxScore (text, e.g. "+inf")
        4 count (1..7000)
  Returns the number of jobs moved (fewer than count: the set has no more). ]]
--@include common.lua
--@include requeue.lua

local metaKey = KEYS[1]
local base, state, maxScore = ARGV[1], ARGV[2], ARGV[3]
local count = tonumber(ARGV[4])
if state ~= "failed" and state ~= "completed" and state ~= "delayed" then
  return redis.error_reply("moveJobsToWait: bad state " .. tostring(state))
end
if not count or count < 1 or count > 7000 then
  return redis.error_reply("moveJobsToWait: count must be 1..7000")
end

local setKey = base .. state
local ids = redis.call("ZRANGEBYSCORE", setKey, "0", maxScore, "LIMIT", "0", tostring(count))
if #ids == 0 then return 0 end

if state ~= "delayed" then
  for _, id in ipairs(ids) do
    local jobKey = base .. id
    ferryForgetFinish(jobKey, state, nil)
    ferryChildPendingAgain(jobKey, state)
  end
end
local blocked = ferryPausedOrMaxed(metaKey, base .. "active")
local maxEvents = ferryMaxEvents(metaKey)
for _, id in ipairs(ids) do
  redis.call("XADD", base .. "events", "MAXLEN", "~", maxEvents, "*", "event", "waiting",
    "jobId", id, "prev", state)
end
redis.call("ZREM", setKey, unpack(ids))
redis.call("LPUSH", base .. "wait", unpack(ids))
if not blocked then redis.call("ZADD", base .. "marker", 0, "0") end
return #ids
