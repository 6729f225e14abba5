--[[ extendLocks.lua - renew the locks of many active jobs in one call (BullMQ 6.7.0
  extendLocks): per job, if the lock still holds our token, SET it again with a fresh TTL
  and SREM the job from the stalled suspects; otherwise report it.

  KEYS: 1 stalled
  ARGV: 1 base  2 lockDuration (ms)  3.. jobId, token pairs
  Returns the positions (0-based pair index) of the jobs whose lock was missing or owned by
  another token: positions, not ids, since the same id may be sent twice (a result kept for
  a resend next to a newer fetch of that job). ]]

local base, duration = ARGV[1], ARGV[2]
local lost = {}
for i = 3, #ARGV - 1, 2 do
  local id, token = ARGV[i], ARGV[i + 1]
  local lockKey = base .. id .. ":lock"
  if redis.call("GET", lockKey) == token and redis.call("SET", lockKey, token, "PX", duration) then
    redis.call("SREM", KEYS[1], id)
  else
    lost[#lost + 1] = (i - 3) / 2
  end
end
return lost
