--[[
  removeJobScheduler: delete a job scheduler and its pending iteration, as BullMQ 6.7.0's
  removeJobScheduler does: the iteration "repeat:<id>:<ZSCORE>" is deleted if it has not
  started (event `removed` with its previous state), then the `repeat` entry and the
  scheduler hash. An iteration that is running finishes normally and produces nothing more
  (its worker finds no scheduler). Difference from Node, on purpose: Node deletes the pending
  iteration only from `delayed`, so one that was already waiting still ran once after the
  removal; here it is also taken out of `prioritized` and `wait`.

  KEYS: 1 repeat  2 repeat:<id>  3 meta  4 events
  ARGV: 1 queue base "<prefix>:<queue>:"  2 scheduler id
  Returns: 0 removed, 1 no such scheduler.
]]
local rcall = redis.call
--@include common.lua

local repeatKey, schedKey, base, sid = KEYS[1], KEYS[2], ARGV[1], ARGV[2]

local millis = rcall("ZSCORE", repeatKey, sid)
if millis then
  local jobId = "repeat:" .. sid .. ":" .. string.format("%d", tonumber(millis))
  local prev
  if rcall("ZREM", base .. "delayed", jobId) == 1 then prev = "delayed"
  elseif rcall("ZREM", base .. "prioritized", jobId) == 1 then prev = "prioritized"
  elseif rcall("LREM", base .. "wait", 1, jobId) > 0 then prev = "wait"
  end
  if prev then
    ferryWipeJob(base .. jobId)
    rcall("XADD", KEYS[4], "MAXLEN", "~", ferryMaxEvents(KEYS[3]), "*", "event", "removed",
      "jobId", jobId, "prev", prev)
  end
end

if rcall("ZREM", repeatKey, sid) == 1 then
  rcall("DEL", schedKey)
  return 0
end
return 1
