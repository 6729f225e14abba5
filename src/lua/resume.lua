--[[
  resume: undo pause (BullMQ 6.7.0 semantics). Also migrates a legacy v5 `paused` list into
  wait: RENAME when wait does not exist, else up to 7000 ids per call (RPUSH + LTRIM) so one
  call never blocks Redis for long; the caller repeats while the return value is > 0,
  emitting the event only on the first call. Then marker "0" if jobs are ready, else the
  delay marker.

  KEYS: 1 paused  2 wait  3 meta  4 prioritized  5 events  6 delayed  7 marker
  ARGV: 1 "1" to emit `resumed`, "0" not to
  Returns: ids still left in the legacy paused list.
]]
local rcall = redis.call
--@include common.lua

local remaining = 0
rcall("HDEL", KEYS[3], "paused")
if rcall("EXISTS", KEYS[1]) == 1 then
  if rcall("EXISTS", KEYS[2]) == 0 then
    rcall("RENAME", KEYS[1], KEYS[2])
  else
    local jobs = rcall("LRANGE", KEYS[1], 0, 6999)
    for s = 1, #jobs, 500 do
      rcall("RPUSH", KEYS[2], unpack(jobs, s, math.min(s + 499, #jobs)))
    end
    rcall("LTRIM", KEYS[1], #jobs, -1)
    remaining = rcall("LLEN", KEYS[1])
  end
end

if rcall("LLEN", KEYS[2]) + rcall("ZCARD", KEYS[4]) > 0 then
  rcall("ZADD", KEYS[7], 0, "0")
else
  ferrySetDelayMarker(KEYS[7], KEYS[6])
end

if ARGV[1] ~= "0" then
  rcall("XADD", KEYS[5], "*", "event", "resumed")
end
return remaining
