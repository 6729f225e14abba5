-- requeue.lua: what the scripts that put finished or delayed jobs back in line share
-- (reprocessJob.lua, moveJobsToWait.lua, promote.lua); spliced in after common.lua by
-- "--@include requeue.lua".

-- JavaScript truthiness of a decoded JSON value (Node decides `opts.lifo ? ...` that way).
local function ferryJsTruthy(v)
  return v ~= nil and v ~= false and v ~= cjson.null and v ~= 0 and v ~= ""
end

-- The push command a job re-enters wait with: RPUSH (runs next) when its stored opts ask
-- for lifo, else LPUSH. Unreadable opts count as no lifo.
local function ferryPushFor(jobKey)
  local text = redis.call("HGET", jobKey, "opts")
  if not text then return "LPUSH" end
  local ok, opts = pcall(cjson.decode, text)
  if ok and type(opts) == "table" and ferryJsTruthy(opts.lifo) then return "RPUSH" end
  return "LPUSH"
end

-- The fields a finished job loses when it runs again: its finish time, its start time and
-- the result of the state it leaves (failedReason or returnvalue). Its stacktrace and its
-- attempt counters stay, as in BullMQ.
local function ferryForgetFinish(jobKey, fromState, extra)
  local result = fromState == "failed" and "failedReason" or "returnvalue"
  if extra and #extra > 0 then
    redis.call("HDEL", jobKey, "finishedOn", "processedOn", result, unpack(extra))
  else
    redis.call("HDEL", jobKey, "finishedOn", "processedOn", result)
  end
end

-- A flow child that runs again is a pending dependency of its parent again (when the
-- parent still exists and had recorded this child's result or failure). The parent
-- itself stays where it is: one that already left waiting-children is not put back.
local function ferryChildPendingAgain(jobKey, fromState)
  local parentKey = redis.call("HGET", jobKey, "parentKey")
  if not parentKey or redis.call("EXISTS", parentKey) == 0 then return end
  local recorded
  if fromState == "failed" then
    recorded = redis.call("ZREM", parentKey .. ":unsuccessful", jobKey) == 1 or
      redis.call("HDEL", parentKey .. ":failed", jobKey) == 1
  else
    recorded = redis.call("HDEL", parentKey .. ":processed", jobKey) == 1
  end
  if recorded then redis.call("SADD", parentKey .. ":dependencies", jobKey) end
end
