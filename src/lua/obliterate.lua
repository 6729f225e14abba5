--[[
  obliterate: delete a queue and everything in it, one chunk per call; the client calls it
  until it answers 0 (BullMQ 6.7.0's Queue.obliterate, with the differences listed below).

  Every call first refuses, changing nothing, while jobs are active unless force is given.
  The first call then pauses the queue (meta.paused, marker deleted, event `paused`) unless it
  is paused already, so that no worker takes a job while the chunks run; a later call refuses
  when the queue is no longer paused (someone resumed it in between).
  A call deletes up to `count` entries, taken in this order: jobs of active (their workers
  lose them), job schedulers (`repeat` entries and their `repeat:<id>` hashes), then jobs of
  wait, the legacy paused list, prioritized, delayed, waiting-children, completed and failed.
  For a job that is its hash, its logs/dependencies/processed/failed/unsuccessful sub-keys,
  its lock, and the deduplication key (with its `dn:` data) the job owns. A job that is the
  last pending child of a flow parent in ANOTHER queue releases that parent to its wait list,
  as removeJob does; a parent in this queue is deleted with the rest. Once every state is
  empty, the same call deletes the queue's own keys (events, meta, id, pc, marker, stalled,
  stalled-check, limiter, metrics, ...).
  Only keys built from this queue's base and the ids its states hold are touched, never a
  pattern match, so another queue whose name starts like this one is safe.

  Differences from BullMQ 6.7.0, on purpose: a refusal leaves the queue as it was (Node pauses
  it first and leaves it paused when the script then refuses); the waiting-children set and its
  jobs (Node deletes a parent only with its last child in this queue), the limiter key (Node
  leaves it), the legacy `priority` key and the locks of jobs in any state are deleted too.
  Like Node, a `de:` key whose job is already gone (kept for its TTL) is not found.

  KEYS: 1 meta
  ARGV: 1 queue base "<prefix>:<queue>:"  2 count: entries per call (1..10000)
        3 force "1"/"0"  4 first call "1"/"0"
  Returns {status, deleted, n}: status 0 done, 1 more to do, -1 the queue is not paused (a
  later call), -2 active jobs without force (n = how many; nothing was changed).
  deleted: keys this call deleted. n on success: keys the pause of this call created (meta,
  events) that did not exist before, so the client can leave them out of its total.
]]
local rcall = redis.call
--@include common.lua
--@include flow.lua

local metaKey = KEYS[1]
local base, budget = ARGV[1], tonumber(ARGV[2])
local force, first = ARGV[3] == "1", ARGV[4] == "1"
if not budget or budget < 1 or budget > 10000 then
  return redis.error_reply("obliterate: count must be 1..10000")
end
local deleted, created = 0, 0

local activeKey = base .. "active"
local nActive = rcall("LLEN", activeKey)
if nActive > 0 and not force then return {-2, 0, nActive} end

if rcall("HEXISTS", metaKey, "paused") == 0 then
  -- a later call on a queue someone resumed refuses; with meta gone the queue was deleted
  -- (a resent last call whose answer was lost): pausing again and finishing is harmless
  if not first and rcall("EXISTS", metaKey) == 1 then return {-1, 0, 0} end
  created = 2 - rcall("EXISTS", metaKey, base .. "events")
  rcall("HSET", metaKey, "paused", 1)
  deleted = deleted + rcall("DEL", base .. "marker")
  rcall("XADD", base .. "events", "*", "event", "paused")
end

local function deleteJob(id)
  local jobKey = base .. id
  local f = rcall("HMGET", jobKey, "parentKey", "deid")
  -- a flow parent in another queue loses this child (one in this queue goes with the rest)
  if f[1] and f[1] ~= "" then ferryReleaseParent(jobKey, f[1], base) end
  if f[2] then
    local dedupKey = base .. "de:" .. f[2]
    if rcall("GET", dedupKey) == id then
      deleted = deleted + rcall("DEL", dedupKey, base .. "dn:" .. f[2])
    end
  end
  deleted = deleted + rcall("DEL", jobKey, jobKey .. ":logs", jobKey .. ":dependencies",
    jobKey .. ":processed", jobKey .. ":failed", jobKey .. ":unsuccessful", jobKey .. ":lock")
end

local function deleteScheduler(sid)
  deleted = deleted + rcall("DEL", base .. "repeat:" .. sid)
end

-- Take up to `budget` members of one state (a list read from its head, or a zset in score
-- order), delete each through `each`, then take them out of the state. The state key itself
-- disappears with its last member and is counted then.
local function drain(key, isList, each)
  local ids
  if isList then
    ids = rcall("LRANGE", key, 0, budget - 1)
  else
    ids = rcall("ZRANGE", key, 0, budget - 1)
  end
  if #ids == 0 then return end
  for _, id in ipairs(ids) do each(id) end
  if isList then
    rcall("LTRIM", key, #ids, -1)
  else
    for i = 1, #ids, 1000 do
      rcall("ZREM", key, unpack(ids, i, math.min(i + 999, #ids)))
    end
  end
  deleted = deleted + (1 - rcall("EXISTS", key))
  budget = budget - #ids
end

local states = {
  {"active", true, deleteJob},
  {"repeat", false, deleteScheduler},
  {"wait", true, deleteJob},
  {"paused", true, deleteJob},
  {"prioritized", false, deleteJob},
  {"delayed", false, deleteJob},
  {"waiting-children", false, deleteJob},
  {"completed", false, deleteJob},
  {"failed", false, deleteJob},
}
for _, s in ipairs(states) do
  drain(base .. s[1], s[2], s[3])
  if budget <= 0 then return {1, deleted, created} end
end

local own = {"active", "repeat", "wait", "paused", "prioritized", "delayed", "waiting-children",
  "completed", "failed", "events", "meta", "id", "pc", "marker", "stalled", "stalled-check",
  "limiter", "delay", "priority", "metrics:completed", "metrics:completed:data",
  "metrics:failed", "metrics:failed:data"}
for i, suffix in ipairs(own) do own[i] = base .. suffix end
deleted = deleted + rcall("DEL", unpack(own))
return {0, deleted, created}
