--[[ getJobLogs.lua - lines of a job's log and their total, read together, as BullMQ
  6.7.0's Queue.getJobLogs(id, start, end, asc) reads them (it uses MULTI): asc = oldest
  first from position start to end; otherwise newest first, positions counted from the end.

  KEYS: 1 the job's :logs list
  ARGV: 1 start (>= 0)  2 end (>= start)  3 "1" = asc
  Returns {lines, count}. ]]

local key = KEYS[1]
local first, last = tonumber(ARGV[1]), tonumber(ARGV[2])
if not first or not last or first < 0 or last < first then
  return redis.error_reply("getJobLogs: bad range")
end
local lines
if ARGV[3] == "1" then
  lines = redis.call("LRANGE", key, first, last)
else
  local back = redis.call("LRANGE", key, -(last + 1), -(first + 1))
  lines = {}
  for i = #back, 1, -1 do lines[#lines + 1] = back[i] end
end
return {lines, redis.call("LLEN", key)}
