--[[ drain.lua - one chunk of BullMQ 6.7.0's Queue.drain(delayed) (its script of the same
  name): delete the jobs of one of wait, paused (legacy list), delayed or prioritized,
  hard (hardremove.lua), except the pending iterations of live job schedulers. No event,
  no marker change (as BullMQ). BullMQ drains everything in one script; the caller here
  runs this per state until it reports no more, so a long queue does not block Redis.
  Unlike BullMQ, which trims as many entries off the head of a list as it deleted jobs
  (so a scheduler iteration kept in wait can lose its place to a deleted id), the kept
  iterations stay in the list, at its head.

  KEYS: 1 repeat (job schedulers zset)
  ARGV: 1 base  2 state: wait, paused, delayed or prioritized  3 chunk (1..10000)
  Returns {deleted, more}: more = 1 when the state may hold further jobs. ]]
--@include common.lua
--@include flow.lua
--@include hardremove.lua

local repeatKey = KEYS[1]
local base, state, chunk = ARGV[1], ARGV[2], tonumber(ARGV[3])
if not chunk or chunk < 1 or chunk > 10000 then
  return redis.error_reply("drain: chunk must be 1..10000")
end
local isList = state == "wait" or state == "paused"
if not isList and state ~= "delayed" and state ~= "prioritized" then
  return redis.error_reply("drain: bad state " .. tostring(state))
end

local keep, nkeep = {}, 0
local schedulers = redis.call("ZRANGE", repeatKey, 0, -1, "WITHSCORES")
for i = 1, #schedulers, 2 do
  keep["repeat:" .. schedulers[i] .. ":" .. schedulers[i + 1]] = true
  nkeep = nkeep + 1
end

-- read enough that, with every kept iteration among them, `chunk` jobs can still go
local want = chunk + nkeep
local key = base .. state
local ids
if isList then
  ids = redis.call("LRANGE", key, 0, want - 1)
else
  ids = redis.call("ZRANGE", key, 0, want - 1)
end
local kept, gone = {}, {}
for _, id in ipairs(ids) do
  if keep[id] then
    kept[#kept + 1] = id
  else
    ferryHardRemove(base, id)
    gone[#gone + 1] = id
  end
end
if isList then
  if #ids > 0 then redis.call("LTRIM", key, #ids, -1) end
  for i = #kept, 1, -1 do redis.call("LPUSH", key, kept[i]) end
else
  ferryZremAll(key, gone)
end
return {#gone, #ids == want and 1 or 0}
