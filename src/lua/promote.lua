--[[ promote.lua - one delayed job to waiting now, with the effects of BullMQ 6.7.0's
  Job.promote() (its script of the same name): out of delayed; to the head of wait (lifo
  does not apply) or, with a priority, to prioritized with a fresh counter; marker "0"
  unless the queue is paused or at its global concurrency; event `waiting {jobId, prev:
  delayed}`; `delay` set to 0. A legacy (pre-v5) marker at the head of wait is dropped, as
  BullMQ does.

  KEYS: 1 job hash  2 meta
  ARGV: 1 base  2 job id
  Returns 0, -1 no such job (nothing changed, as Node's Job.fromId finds none), -3 not
  delayed. ]]
--@include common.lua

local jobKey, metaKey = KEYS[1], KEYS[2]
local base, id = ARGV[1], ARGV[2]

if redis.call("EXISTS", jobKey) == 0 then return -1 end
if redis.call("ZREM", base .. "delayed", id) == 0 then return -3 end

local waitKey = base .. "wait"
local blocked = ferryPausedOrMaxed(metaKey, base .. "active")
local head = redis.call("LINDEX", waitKey, 0)
if head and string.sub(head, 1, 2) == "0:" then redis.call("LPOP", waitKey) end
local priority = tonumber(redis.call("HGET", jobKey, "priority")) or 0
if priority == 0 then
  redis.call("LPUSH", waitKey, id)
else
  redis.call("ZADD", base .. "prioritized", ferryPrioScore(priority, base .. "pc"), id)
end
if not blocked then redis.call("ZADD", base .. "marker", 0, "0") end
redis.call("XADD", base .. "events", "*", "event", "waiting", "jobId", id, "prev", "delayed")
redis.call("HSET", jobKey, "delay", 0)
return 0
