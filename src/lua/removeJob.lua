--[[
  removeJob: remove one job in any state, as BullMQ 6.7.0's Queue.remove does for a job
  without children: refuse the current iteration of a job scheduler and a locked (active)
  job; release the job's flow parent when it was the last pending child; take the id out of
  whatever state holds it; drop a deduplication key the job owns; delete the hash and its
  sub-keys; event `removed {jobId, prev}` when a key was deleted. Children of a flow parent are not removed.
  An id whose hash is gone (left in a state, or sub-keys left) is cleaned up all the same,
  as Node's remove does; only when nothing at all was there is the answer -1.

  KEYS: 1 job hash  2 repeat (job schedulers zset)
  ARGV: 1 job id  2 queue base "<prefix>:<queue>:"
  Returns: 1 removed, -1 no such job, -8 current scheduler iteration, 0 locked.
]]
local rcall = redis.call
--@include common.lua
--@include flow.lua

local jobKey, jobId, base = KEYS[1], ARGV[1], ARGV[2]

local exists = rcall("EXISTS", jobKey) == 1

local rjk = exists and rcall("HGET", jobKey, "rjk")
if rjk then
  local prevMillis = rcall("ZSCORE", KEYS[2], rjk)
  if prevMillis and jobId == "repeat:" .. rjk .. ":" .. prevMillis then return -8 end
end

if rcall("EXISTS", jobKey .. ":lock") == 1 then return 0 end

-- flow child: drop the dependency; the last one releases the parent to wait
local parentKey = exists and rcall("HGET", jobKey, "parentKey")
if parentKey and parentKey ~= "" then ferryReleaseParent(jobKey, parentKey, nil) end

local prev = "unknown"
if rcall("ZREM", base .. "completed", jobId) == 1 then prev = "completed"
elseif rcall("ZREM", base .. "waiting-children", jobId) == 1 then prev = "waiting-children"
elseif rcall("ZREM", base .. "delayed", jobId) == 1 then prev = "delayed"
elseif rcall("ZREM", base .. "failed", jobId) == 1 then prev = "failed"
elseif rcall("ZREM", base .. "prioritized", jobId) == 1 then prev = "prioritized"
elseif rcall("LREM", base .. "wait", 1, jobId) == 1 then prev = "wait"
elseif rcall("LREM", base .. "paused", 1, jobId) == 1 then prev = "paused"
elseif rcall("LREM", base .. "active", 1, jobId) == 1 then prev = "active"
end

local dedupId = exists and rcall("HGET", jobKey, "deid")
if dedupId then
  local dedupKey = base .. "de:" .. dedupId
  if rcall("GET", dedupKey) == jobId then
    rcall("DEL", dedupKey, base .. "dn:" .. dedupId)
  end
end

local wiped = ferryWipeJob(jobKey)
if wiped == 0 and prev == "unknown" then return -1 end
-- as Node: the event only when a key was deleted (not for an id left alone in a state)
if wiped > 0 then
  rcall("XADD", base .. "events", "MAXLEN", "~", ferryMaxEvents(base .. "meta"), "*", "event",
    "removed", "jobId", jobId, "prev", prev)
end
return 1
