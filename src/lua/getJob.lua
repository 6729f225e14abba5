--[[
  getJob: a job's hash and its state, read atomically. State lookup order as BullMQ
  6.7.0's getState: completed, failed, delayed, prioritized, active, wait ("waiting"),
  legacy paused ("waiting"), waiting-children, else "unknown".

  KEYS: 1 job hash  2 completed  3 failed  4 delayed  5 prioritized  6 active  7 wait
        8 paused  9 waiting-children
  ARGV: 1 job id
  Returns: {} when the job does not exist, else {state, {field, value, ...}}.
]]
local rcall = redis.call
local id = ARGV[1]
local hash = rcall("HGETALL", KEYS[1])
if #hash == 0 then return {} end

local state = "unknown"
if rcall("ZSCORE", KEYS[2], id) then state = "completed"
elseif rcall("ZSCORE", KEYS[3], id) then state = "failed"
elseif rcall("ZSCORE", KEYS[4], id) then state = "delayed"
elseif rcall("ZSCORE", KEYS[5], id) then state = "prioritized"
elseif rcall("LPOS", KEYS[6], id) then state = "active"
elseif rcall("LPOS", KEYS[7], id) then state = "waiting"
elseif rcall("LPOS", KEYS[8], id) then state = "waiting"
elseif rcall("ZSCORE", KEYS[9], id) then state = "waiting-children"
end
return {state, hash}
