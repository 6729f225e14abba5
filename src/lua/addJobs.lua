--[[
  addJobs: add many jobs in one call. Every job ends up exactly as BullMQ 6.7.0's
  addStandardJob / addDelayedJob / addPrioritizedJob leave it (hash, wait/delayed/prioritized
  entry, events, marker, `id` counter); only the Redis work is batched where the result is
  the same: one INCRBY for the counter (ids are handed out in job order, one per job,
  custom ids and duplicates included, as Node's per-job INCR does), one meta read, one
  LPUSH/RPUSH of the whole batch (head and tail pushes commute), one marker update.
  Deduplication and flows are refused by the caller before this script runs.

  KEYS: 1 wait  2 meta  3 id  4 delayed  5 prioritized  6 pc  7 marker  8 events  9 active
  ARGV: 1 queue base "<prefix>:<queue>:"   2 producer clock (ms): the jobs' timestamp
        3 job count n, then 5 fields per job:
          name, data (JSON), opts (stored JSON), custom id or "",
          "" (the common case: timestamp = ARGV[2], no delay, priority 0, not lifo) or
          "<timestamp ms> <delay ms> <priority> <lifo 1|0>"
          (fewer arguments per job: each costs Redis a Lua string)
  Returns: the n job ids in order (a duplicate custom id returns that id; nothing is
  written for it except a `duplicated` event).
]]
local rcall = redis.call
--@include common.lua

local waitKey, metaKey, delayedKey = KEYS[1], KEYS[2], KEYS[4]
local prioKey, pcKey, markerKey, eventsKey = KEYS[5], KEYS[6], KEYS[7], KEYS[8]
local base, clock = ARGV[1], ARGV[2]
local n = tonumber(ARGV[3])

-- Nothing is written until every argument is parsed and every key the call writes is known
-- to have the right type (a read of each: Redis reports a wrong type only when a command
-- touches the key). Redis does not undo a script that fails part-way, and a job hash left
-- behind without its wait/delayed/prioritized entry would be taken for a duplicate by the
-- retry (custom ids: the outbox relay's), so the job would be lost.
local toWait, toDelayed, toPrio = false, false, false
for i = 1, n do
  local extra = ARGV[3 + (i - 1) * 5 + 5]
  if extra == "" then
    toWait = true
  else
    local _, delay, priority = string.match(extra, "^(%d+) (%d+) (%d+) [01]$")
    if not delay then
      return redis.error_reply("ERR addJobs: job " .. i .. ": bad fields '" .. extra .. "'")
    end
    if delay ~= "0" and tonumber(delay) > 0 then
      toDelayed = true
    elseif priority ~= "0" and tonumber(priority) > 0 then
      toPrio = true
    else
      toWait = true
    end
  end
end
rcall("XLEN", eventsKey)
rcall("ZCARD", markerKey)
if toWait then rcall("LLEN", waitKey) end
if toDelayed then rcall("ZCARD", delayedKey) end
if toPrio then
  rcall("ZCARD", prioKey)
  local pc = rcall("GET", pcKey) -- INCRed per prioritized job: it must hold an integer
  if pc and not string.match(pc, "^%-?%d+$") then
    return redis.error_reply("ERR addJobs: " .. pcKey .. " does not hold an integer")
  end
end
-- meta and active are only read (meta gets its default events length, as Node's Queue
-- writes it); the events length must be a whole number for XADD MAXLEN
local maxEvents = ferryMaxEvents(metaKey)
if not string.match(tostring(maxEvents), "^%d+$") then
  return redis.error_reply("ERR addJobs: " .. metaKey .. " opts.maxLenEvents is not a whole number")
end
local blocked = ferryPausedOrMaxed(metaKey, KEYS[9])

local first = rcall("INCRBY", KEYS[3], n) - n

local ids, heads, tails = {}, {}, {}
local ready, delayed = false, false

for i = 1, n do
  local o = 3 + (i - 1) * 5
  local name, customId, extra = ARGV[o + 1], ARGV[o + 4], ARGV[o + 5]
  local ts, delay, priority, lifo = clock, "0", "0", "0"
  if extra ~= "" then
    ts, delay, priority, lifo = string.match(extra, "^(%d+) (%d+) (%d+) ([01])$")
  end
  local jobId = customId
  local jobKey
  local duplicate = false
  if customId == "" then
    jobId = tostring(first + i)
    jobKey = base .. jobId
  else
    jobKey = base .. customId
    duplicate = rcall("EXISTS", jobKey) == 1
  end
  if duplicate then
    rcall("XADD", eventsKey, "MAXLEN", "~", maxEvents, "*", "event", "duplicated", "jobId", jobId)
  else
    rcall("HSET", jobKey, "name", name, "data", ARGV[o + 2], "opts", ARGV[o + 3],
      "timestamp", ts, "delay", delay, "priority", priority)
    rcall("XADD", eventsKey, "*", "event", "added", "jobId", jobId, "name", name)
    local d = delay ~= "0" and tonumber(delay) or 0
    if d > 0 then
      local due = tonumber(ts) + d
      rcall("ZADD", delayedKey, ferryDelayedScore(delayedKey, due), jobId)
      rcall("XADD", eventsKey, "MAXLEN", "~", maxEvents, "*", "event", "delayed", "jobId", jobId,
        "delay", due)
      delayed = true
    else
      local p = priority ~= "0" and tonumber(priority) or 0
      if p > 0 then
        rcall("ZADD", prioKey, ferryPrioScore(p, pcKey), jobId)
      elseif lifo == "1" then
        tails[#tails + 1] = jobId
      else
        heads[#heads + 1] = jobId
      end
      ready = true
      rcall("XADD", eventsKey, "MAXLEN", "~", maxEvents, "*", "event", "waiting", "jobId", jobId)
    end
  end
  ids[i] = jobId
end

-- push in slices so unpack stays far from Lua's C-stack limit
local function pushAll(cmd, list)
  for s = 1, #list, 500 do
    rcall(cmd, waitKey, unpack(list, s, math.min(s + 499, #list)))
  end
end
pushAll("LPUSH", heads)
pushAll("RPUSH", tails)

if ready and not blocked then rcall("ZADD", markerKey, 0, "0") end
if delayed then ferrySetDelayMarker(markerKey, delayedKey) end

return ids
