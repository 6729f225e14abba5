--[[
  nextSchedulerIteration: a worker fetched an iteration of a job scheduler (its hash has
  `rjk`); add the next iteration, as BullMQ 6.7.0's updateJobScheduler does when its Node
  worker calls upsertJobScheduler(override=false) right after moveToActive.

  Only the scheduler's current iteration, "repeat:<id>:<ZSCORE repeat id>", may produce the
  next one: this is what keeps one job per tick when several workers (or a stalled-and-
  refetched job, or a retried call) race. If the next iteration already exists the event
  `duplicated` is written and nothing else. `every` is taken from the scheduler hash (else
  from the job's repeat options) and the next slot is prev + every, or the first offset-
  aligned slot after now when ticks were missed; for a pattern the client computed the slot.
  Name and data come from the scheduler hash (so a re-upserted template applies from the next
  iteration on); the opts are the client's.

  KEYS: 1 repeat  2 repeat:<id>  3 meta  4 events
  ARGV: 1 queue base "<prefix>:<queue>:"  2 scheduler id  3 id of the fetched job  4 now (ms)
        5 pattern: next millis computed by the client, else ""  6 every from the job's repeat
        options or ""  7 offset from the job's repeat options or ""  8 next iteration's opts
        JSON without jobId and delay  9 priority  10 lifo ("1"/"0")
        11 "1" when the id has the shape of a legacy v5 repeat key: then only a hash with `ic`
        counts as a scheduler
  Returns: {1, jobId, delay} added; {0} not the current iteration, or no such scheduler;
  {2, jobId} the next iteration already existed (`duplicated`); {3} a legacy repeatable job;
  errors, nothing written: {4, "nohash" | "noname"} the `repeat` entry has no hash, or a hash
  without `name` (corrupted or half-removed); {5, hash's every or ""} no usable `every` (the
  hash's, else the job's, is not a number in (0, 2^53-1]; or neither is a number and there is
  no pattern slot); {6, ic} the hash's `ic` is not
  an integer.
]]
local rcall = redis.call
--@include common.lua
--@include scheduler.lua

local repeatKey, schedKey, metaKey = KEYS[1], KEYS[2], KEYS[3]
local base, sid, now = ARGV[1], ARGV[2], tonumber(ARGV[4])

local prev = rcall("ZSCORE", repeatKey, sid)
if not prev then return {0} end
if ARGV[11] == "1" and rcall("HEXISTS", schedKey, "ic") == 0 then return {3} end
prev = tonumber(prev)
if ARGV[3] ~= "repeat:" .. sid .. ":" .. schedMs(prev) then return {0} end

-- Checked before any write, so a broken scheduler is reported and left as it was (Node's
-- script would fail half-way, or add an iteration with a broken id).
local a = rcall("HMGET", schedKey, "name", "data", "every", "startDate", "offset", "ic")
if not a[1] then
  -- a `repeat` entry whose hash is gone or has no name: nothing to produce from
  if rcall("EXISTS", schedKey) == 0 then return {4, "nohash"} end
  return {4, "noname"}
end
local ic = a[6]
if ic and not ((ic == "0" or string.match(ic, "^%-?[1-9]%d*$")) and #ic <= 18) then
  return {6, ic} -- HINCRBY would fail
end

local nextMillis = tonumber(ARGV[5])
local every = tonumber(a[3]) or tonumber(ARGV[6])
if every then
  if not (every > 0 and every <= 9007199254740991) then return {5, a[3] or ""} end
  local offset = a[5] or (ARGV[7] ~= "" and ARGV[7]) or 0
  nextMillis = schedEveryNext(prev, every, now, offset, a[4])
end
if not nextMillis then return {5, a[3] or ""} end

local maxEvents = ferryMaxEvents(metaKey)
local jobId = "repeat:" .. sid .. ":" .. schedMs(nextMillis)
if rcall("EXISTS", base .. jobId) == 1 then
  rcall("XADD", KEYS[4], "MAXLEN", "~", maxEvents, "*", "event", "duplicated", "jobId", jobId)
  return {2, jobId}
end

rcall("HINCRBY", schedKey, "ic", 1) -- the first write: it is the one that could fail
rcall("ZADD", repeatKey, nextMillis, sid)
rcall("INCR", base .. "id")
local delay = nextMillis - now
if delay < 0 then delay = 0 end
schedAddIteration(base, jobId, sid, a[1], a[2] or "{}", schedOptsWith(ARGV[8], jobId, delay), now,
  delay, tonumber(ARGV[9]), ARGV[10] == "1", maxEvents)
return {1, jobId, delay}
