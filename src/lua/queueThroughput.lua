--[[ queueThroughput.lua - how many jobs finished per time bucket, from the scores of the
  completed and failed sets (finishedOn, ms), for ferry_queue_throughput. Read-only.

  Buckets end at Redis' clock: bucket i (1 = the oldest) counts scores in
  (now - (n - i + 1) * b, now - (n - i) * b]; the newest also takes scores after now.

  KEYS: 1 completed 2 failed
  ARGV: 1 bucket ms (1..86400000)  2 buckets (1..1000)
  Returns {now_ms, {completed per bucket}, {failed per bucket}}, oldest bucket first. ]]

local b, n = tonumber(ARGV[1]), tonumber(ARGV[2])
if not b or not n or b < 1 or b > 86400000 or n < 1 or n > 1000 or b % 1 ~= 0 or n % 1 ~= 0 then
  return redis.error_reply("queueThroughput: bad arguments")
end
local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local function counts(key)
  local out = {}
  for i = 1, n do
    local lo = now - (n - i + 1) * b
    local hi = now - (n - i) * b
    local upper = (i == n) and "+inf" or string.format("%d", hi)
    out[i] = redis.call("ZCOUNT", key, "(" .. string.format("%d", lo), upper)
  end
  return out
end

return {now, counts(KEYS[1]), counts(KEYS[2])}
