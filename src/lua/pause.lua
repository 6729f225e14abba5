--[[
  pause: pause the queue for every worker (BullMQ 6.7.0 semantics): meta.paused = 1, the
  marker is deleted so blocked workers stay asleep, event `paused`. Jobs stay in wait.

  KEYS: 1 meta  2 marker  3 events
]]
local rcall = redis.call
rcall("HSET", KEYS[1], "paused", 1)
rcall("DEL", KEYS[2])
rcall("XADD", KEYS[3], "*", "event", "paused")
return 0
