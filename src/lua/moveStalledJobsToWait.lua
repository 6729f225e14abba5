--[[ moveStalledJobsToWait.lua - the stalled-job checker (BullMQ 6.7.0
  moveStalledJobsToWait). At most once per stalledInterval across all workers (the
  `stalled-check` key). A job that was a suspect at the previous check (in `stalled`) and
  whose lock is gone is moved back to the front of wait with stc + 1; over maxStalledCount
  (and not a live scheduler job) it gets `defa` so the next fetch fails it without running.
  Every job now in active becomes a suspect for the next check.

  KEYS: 1 stalled 2 wait 3 active 4 stalled-check 5 meta 6 marker 7 events 8 repeat
  ARGV: 1 maxStalledCount  2 base  3 now (ms)  4 stalledInterval (ms)
  Returns the ids moved back to wait. ]]
--@include common.lua

if redis.call("EXISTS", KEYS[4]) == 1 then return {} end
redis.call("SET", KEYS[4], ARGV[3], "PX", ARGV[4])
redis.call("XTRIM", KEYS[7], "MAXLEN", "~", ferryMaxEvents(KEYS[5]))

local maxStalled = tonumber(ARGV[1])
local base = ARGV[2]
local moved = {}
local suspects = redis.call("SMEMBERS", KEYS[1])
if #suspects > 0 then
  redis.call("DEL", KEYS[1])
  for _, id in ipairs(suspects) do
    if string.sub(id, 1, 2) == "0:" then
      redis.call("LREM", KEYS[3], 1, id) -- pre-v5 marker
    else
      local jobKey = base .. id
      if redis.call("EXISTS", jobKey .. ":lock") == 0 and redis.call("LREM", KEYS[3], 1, id) > 0 then
        local stc = redis.call("HINCRBY", jobKey, "stc", 1)
        local scheduled = false
        local sid = redis.call("HGET", jobKey, "rjk")
        if sid then
          scheduled = redis.call("EXISTS", KEYS[8] .. ":" .. sid) == 1
            or redis.call("ZSCORE", KEYS[8], sid) ~= false
        end
        if stc > maxStalled and not scheduled then
          redis.call("HSET", jobKey, "defa", "job stalled more than allowable limit")
        end
        local blocked = ferryPausedOrMaxed(KEYS[5], KEYS[3])
        redis.call("RPUSH", KEYS[2], id)
        if not blocked then redis.call("ZADD", KEYS[6], 0, "0") end
        redis.call("XADD", KEYS[7], "*", "event", "waiting", "jobId", id, "prev", "active")
        redis.call("XADD", KEYS[7], "*", "event", "stalled", "jobId", id)
        moved[#moved + 1] = id
      end
    end
  end
end

local active = redis.call("LRANGE", KEYS[3], 0, -1)
for from = 1, #active, 7000 do
  redis.call("SADD", KEYS[1], unpack(active, from, math.min(from + 6999, #active)))
end
return moved
