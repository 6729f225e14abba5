--[[
  upsertJobScheduler: create or replace a job scheduler and its pending iteration, leaving
  Redis as BullMQ 6.7.0's addJobScheduler does (`repeat` zset, `repeat:<id>` hash, iteration
  job "repeat:<id>:<millis>" with rjk, `id` counter, events, markers).

  `every`: the slot is computed here from Redis state. A new scheduler (or a changed `every`)
  starts at startDate (not before now), else at the next offset-aligned slot when an offset is
  given, else now. A pending iteration that has not started (delayed, prioritized, waiting) is
  replaced; for an unchanged `every` the replacement keeps its millis, so upserting again on
  every deploy neither duplicates nor shifts the schedule. A slot held by another job (stale
  finished iterations of an earlier scheduler with this id) moves the new iteration on by
  `every`, trying the computed slot and up to 32 after it; the pending iteration's own slot
  counts as free, since it is replaced. `pattern`: the client computed the slot (cron in the
  scheduler's zone).
  Differences from Node, on purpose: the pending iteration is looked for in `wait` and in the
  legacy `paused` list (Node looks only in `paused` while the queue is paused, so an upsert on a
  paused queue left a duplicate); a pattern slot held by another job is always refused (-10),
  never overwritten. A refusal (-10, -11) is decided before anything is written or deleted:
  the scheduler hash, its `repeat` entry and its pending iteration are left as they were.

  KEYS: 1 repeat  2 repeat:<id>  3 meta  4 events
  ARGV: 1 queue base "<prefix>:<queue>:"  2 scheduler id  3 now (ms)
        4 pattern: next millis computed by the client; every: ""
        5 every (ms) or ""  6 offset given with every, or ""  7 startDate or ""  8 endDate or ""
        9 tz or ""  10 limit or ""  11 pattern or ""  12 job name  13 template data (JSON)
        14 template opts (JSON, "{}" = none)  15 iteration opts JSON without jobId and delay
        16 priority  17 lifo ("1"/"0")
  Returns: {jobId, delay}; -10 pattern slot held by a job that cannot be replaced; -11 every:
  the computed slot and the 32 after it all held by jobs that cannot be replaced.
]]
local rcall = redis.call
--@include common.lua
--@include scheduler.lua

local repeatKey, schedKey, metaKey = KEYS[1], KEYS[2], KEYS[3]
local base, sid, now = ARGV[1], ARGV[2], tonumber(ARGV[3])
local every = tonumber(ARGV[5])
local startDate = ARGV[7] ~= "" and ARGV[7] or nil
local nextMillis = tonumber(ARGV[4])

local maxEvents = ferryMaxEvents(metaKey)
local prev = rcall("ZSCORE", repeatKey, sid)
if prev then prev = tonumber(prev) end

-- offset: the one given (every only), else 0 for the slot computation; `keepOffset` is what
-- the hash gets (nil = keep the stored one).
local offset = tonumber(ARGV[6]) or 0
local keepOffset = tonumber(ARGV[6])
local newOffset = offset
local updatedEvery = false
if every then
  local millis = prev
  if prev and tonumber(rcall("HGET", schedKey, "every")) ~= every then
    millis = nil
    updatedEvery = true
  end
  nextMillis, newOffset = schedEveryNext(millis, every, now, offset, startDate)
end

-- Whether a job has not started (delayed, prioritized, waiting): only such an iteration is
-- replaced. Read-only: nothing is deleted before the slot is settled.
local function isPending(jobId)
  return rcall("ZSCORE", base .. "delayed", jobId) or rcall("ZSCORE", base .. "prioritized", jobId)
    or rcall("LPOS", base .. "wait", jobId) or rcall("LPOS", base .. "paused", jobId)
end

-- Delete a pending (not started) iteration; true when it was there.
local function removePending(jobId)
  local jobKey = base .. jobId
  if rcall("ZREM", base .. "delayed", jobId) == 1 or rcall("ZREM", base .. "prioritized", jobId) == 1
    or rcall("LREM", base .. "wait", 1, jobId) > 0 or rcall("LREM", base .. "paused", 1, jobId) > 0 then
    local deid = rcall("HGET", jobKey, "deid")
    if deid and rcall("GET", base .. "de:" .. deid) == jobId then
      rcall("DEL", base .. "de:" .. deid, base .. "dn:" .. deid)
    end
    ferryWipeJob(jobKey)
    return true
  end
  return false
end

-- The current iteration is replaced when it exists and has not started.
local curId, replace = nil, false
if prev then
  curId = "repeat:" .. sid .. ":" .. schedMs(prev)
  replace = rcall("EXISTS", base .. curId) == 1 and isPending(curId) and true or false
end
if replace then
  if every and not updatedEvery then nextMillis = prev end
else
  keepOffset = newOffset
end

-- The slot is settled and any refusal (-10, -11) made BEFORE the pending iteration is
-- deleted: deleting it first would leave the scheduler with no next run. A slot is free when
-- no job holds it, or when its job is the pending iteration about to be replaced. A pattern
-- slot held by another job is refused (Node adds the new iteration over the other job
-- instead; ferry never overwrites one).
local function held(id)
  if replace and id == curId then return false end
  return rcall("EXISTS", base .. id) == 1
end
local jobId = "repeat:" .. sid .. ":" .. schedMs(nextMillis)
if held(jobId) then
  if not every then return -10 end
  -- stale finished iterations of an earlier scheduler with this id may hold several slots:
  -- the computed one and up to 32 after it are tried
  local scans, taken = 0, true
  repeat
    nextMillis = nextMillis + every
    jobId = "repeat:" .. sid .. ":" .. schedMs(nextMillis)
    scans = scans + 1
    taken = held(jobId)
  until not taken or scans >= 32
  if taken then return -11 end
end
if replace then removePending(curId) end

local delay = nextMillis - now
if delay < 0 then delay = 0 end

-- the scheduler hash, rewritten whole (iteration count kept)
rcall("ZADD", repeatKey, nextMillis, sid)
local fields = {}
local function put(k, v)
  if v and v ~= "" then
    fields[#fields + 1] = k
    fields[#fields + 1] = v
  end
end
put("tz", ARGV[9])
put("limit", ARGV[10])
put("pattern", ARGV[11])
put("startDate", ARGV[7])
put("endDate", ARGV[8])
put("every", ARGV[5])
if keepOffset then
  put("offset", schedMs(keepOffset))
else
  put("offset", rcall("HGET", schedKey, "offset"))
end
if ARGV[14] ~= "{}" then put("opts", ARGV[14]) end
if ARGV[13] ~= "{}" then put("data", ARGV[13]) end
put("ic", rcall("HGET", schedKey, "ic") or "1")
rcall("DEL", schedKey)
rcall("HSET", schedKey, "name", ARGV[12], unpack(fields))

rcall("INCR", base .. "id")
schedAddIteration(base, jobId, sid, ARGV[12], ARGV[13], schedOptsWith(ARGV[15], jobId, delay), now,
  delay, tonumber(ARGV[16]), ARGV[17] == "1", maxEvents)
return {jobId, delay}
