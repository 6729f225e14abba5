--[[ cleanJobsInSet.lua - one call of BullMQ 6.7.0's Queue.clean(grace, limit, state) (its
  script of the same name): delete at most `limit` jobs of one state that are older than
  the cutoff (now - grace), hard (hardremove.lua), and write event `cleaned {count}` -
  also when nothing was deleted, as BullMQ does. Which jobs are looked at, per state:
  * completed / failed: the oldest `limit` finished at or before the cutoff (the score);
  * wait / paused (lists): the `limit` at the tail (the oldest), each compared by the first
    of finishedOn, processedOn, timestamp it has (none = old enough);
  * delayed: the `limit` due soonest, compared by processedOn, else timestamp;
  * prioritized: the `limit` most urgent, compared by timestamp.
  The pending iteration of a live job scheduler is never deleted (not looked for in
  completed / failed). Older jobs beyond those looked at stay, as in BullMQ: the caller
  stops when a call deletes fewer than `limit`.

  KEYS: 1 events  2 repeat (job schedulers zset)
  ARGV: 1 base "<prefix>:<queue>:"  2 state  3 cutoff (ms)  4 limit (1..10000)
  Returns the ids deleted, in the order they were looked at. ]]
--@include common.lua
--@include flow.lua
--@include hardremove.lua

local eventsKey, repeatKey = KEYS[1], KEYS[2]
local base, state = ARGV[1], ARGV[2]
local cutoff, limit = tonumber(ARGV[3]), tonumber(ARGV[4])
if not cutoff then return redis.error_reply("cleanJobsInSet: bad cutoff") end
if not limit or limit < 1 or limit > 10000 then
  return redis.error_reply("cleanJobsInSet: limit must be 1..10000")
end

-- the job's time: the first of `fields` it has (nil when none)
local function stampOf(jobKey, fields)
  local v = redis.call("HMGET", jobKey, unpack(fields))
  for i = 1, #fields do
    if v[i] then return tonumber(v[i]) end
  end
  return nil
end

local setKey = base .. state
local removed = {}
if state == "wait" or state == "paused" then
  local ids = redis.call("LRANGE", setKey, -limit, -1)
  local n = #ids
  for i, id in ipairs(ids) do
    local jobKey = base .. id
    if not ferryIsCurrentIteration(id, jobKey, repeatKey) then
      local ts = stampOf(jobKey, {"finishedOn", "processedOn", "timestamp"})
      if not ts or ts <= cutoff then
        -- blank it now, take the blanks out at the end: indices stay valid meanwhile
        redis.call("LSET", setKey, i - n - 1, "")
        ferryHardRemove(base, id)
        removed[#removed + 1] = id
      end
    end
  end
  if #removed > 0 then redis.call("LREM", setKey, 0, "") end
elseif state == "delayed" or state == "prioritized" then
  local fields = state == "delayed" and {"processedOn", "timestamp"} or {"timestamp"}
  local ids = redis.call("ZRANGEBYSCORE", setKey, "0", "+inf", "LIMIT", "0", tostring(limit))
  for _, id in ipairs(ids) do
    local jobKey = base .. id
    if not ferryIsCurrentIteration(id, jobKey, repeatKey) then
      local ts = stampOf(jobKey, fields)
      if not ts or ts <= cutoff then
        ferryHardRemove(base, id)
        removed[#removed + 1] = id
      end
    end
  end
  ferryZremAll(setKey, removed)
elseif state == "completed" or state == "failed" then
  local ids = redis.call("ZRANGEBYSCORE", setKey, "0", ARGV[3], "LIMIT", "0", tostring(limit))
  for _, id in ipairs(ids) do
    ferryHardRemove(base, id)
    removed[#removed + 1] = id
  end
  ferryZremAll(setKey, removed)
else
  return redis.error_reply("cleanJobsInSet: bad state " .. tostring(state))
end

redis.call("XADD", eventsKey, "*", "event", "cleaned", "count", #removed)
return removed
