--[[ moveToFinished.lua - finish MANY active jobs in one call (completed and final failures
  mixed; BullMQ 6.7.0 moveToFinished per job), then fetch up to n next jobs (fetchNext).
  Per job, in order, BullMQ's effects: -1 job missing; for completed -4 pending children /
  -9 failed children; lock check (-6 other token, -2 missing; never forced); failed: HSET
  failedReason (+ stacktrace); LREM active (-3 when absent); deduplication key release;
  atm + 1; keepJobs (count 0 -> delete the job, else ZADD target, HSET value + finishedOn,
  HDEL defa on failed, trim by age/count); event completed|failed; for failed with
  atm >= attempts, event retries-exhausted. Batching changes no per-job effect, only how
  many commands carry them: the events stream is XTRIMmed once per call (before any
  event), the released jobs leave `stalled` in one SREM, `drained` is emitted once (when
  some job finished, the fetch found nothing at all and wait, active and prioritized are
  empty), and a deleted job's atm is not incremented first (nobody can read it).
  Not handled (flows): parent dependency bookkeeping, keepLastIfActive re-enqueue.

  KEYS: 1 wait 2 active 3 prioritized 4 events 5 limiter 6 delayed 7 meta 8 pc 9 marker
        10 stalled 11 completed 12 failed
  ARGV: 1 base  2 now (ms)  3 n to fetch (0 = none)  4 token prefix  5 first token counter
        6 lockDuration  7 worker name ("" none)  8 limiter max ("" none)
        9 limiter duration ("" none)  10 popMany ("1" = Redis >= 6.2)
        11 N jobs to finish, then N groups of 11:
        jobId, token, target (completed|failed), value (returnvalue JSON | failedReason),
        stacktrace JSON ("" = leave), keepCount (-1 keep all, 0 delete, n newest n),
        keepAge seconds ("" = none), keepLimit, attempts, trim ("1" = trim the target set
        after this job; the caller sends "0" when the next job into the same set has the
        same keep settings, so a run of equal settings trims once), deid (the job's `deid`
        field as fetched, "" = none; it is written only when the job is added)
  Returns {codes, jobs, rateLimitTtl, nextDelayedMs}: codes[i] is 0 or the negative code of
  job i; the rest as moveToActive.lua. ]]
--@include common.lua

--@include fetch.lua

local k = {wait = KEYS[1], active = KEYS[2], prioritized = KEYS[3], events = KEYS[4],
  limiter = KEYS[5], delayed = KEYS[6], meta = KEYS[7], pc = KEYS[8], marker = KEYS[9],
  stalled = KEYS[10], completed = KEYS[11], failed = KEYS[12]}
local base = ARGV[1]
local nowStr = ARGV[2]
local now = tonumber(nowStr)
local nJobs = tonumber(ARGV[11])
local STRIDE = 11

-- removeOnComplete / removeOnFail trimming of a whole finished set (BullMQ
-- removeJobsByMaxAge + removeJobsByMaxCount).
local function trimSet(setKey, count, age, limit)
  if age then
    local start = now - age * 1000
    local ids = redis.call("ZREVRANGEBYSCORE", setKey, start, "-inf", "LIMIT", 0, limit)
    for _, jid in ipairs(ids) do ferryWipeJob(base .. jid) end
    if #ids > 0 then
      if #ids < limit then
        redis.call("ZREMRANGEBYSCORE", setKey, "-inf", start)
      else
        for from = 1, #ids, 7000 do
          redis.call("ZREM", setKey, unpack(ids, from, math.min(from + 6999, #ids)))
        end
      end
    end
  end
  if count > 0 then
    local ids = redis.call("ZREVRANGE", setKey, count, -1)
    for _, jid in ipairs(ids) do ferryWipeJob(base .. jid) end
    redis.call("ZREMRANGEBYRANK", setKey, 0, -(count + 1))
  end
end

if nJobs > 0 then
  redis.call("XTRIM", k.events, "MAXLEN", "~", ferryMaxEvents(k.meta))
end

local codes = {}
local released = {}
local finishedSome = false
for i = 0, nJobs - 1 do
  local a = 12 + i * STRIDE
  local id, token, target, value, stack = ARGV[a], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], ARGV[a + 4]
  local jobKey = base .. id
  local failed = target == "failed"
  local code = 0
  if redis.call("EXISTS", jobKey) == 0 then
    code = -1
  elseif not failed and redis.call("EXISTS", jobKey .. ":dependencies", jobKey .. ":unsuccessful") > 0 then
    -- a set or zset key exists only while it has members
    if redis.call("SCARD", jobKey .. ":dependencies") ~= 0 then code = -4 else code = -9 end
  elseif token ~= "0" then
    local lockKey = jobKey .. ":lock"
    local cur = redis.call("GET", lockKey)
    if cur == token then
      redis.call("DEL", lockKey)
      released[#released + 1] = id
    elseif cur then
      code = -6
    else
      code = -2
    end
  end
  if code == 0 then
    if failed then
      if stack ~= "" then
        redis.call("HSET", jobKey, "failedReason", value, "stacktrace", stack)
      else
        redis.call("HSET", jobKey, "failedReason", value)
      end
    end
    if redis.call("LREM", k.active, -1, id) < 1 then code = -3 end
  end
  if code == 0 then
    local deid = ARGV[a + 10]
    if deid ~= "" then
      local dk = base .. "de:" .. deid
      local pttl = redis.call("PTTL", dk)
      if pttl == 0 then
        redis.call("DEL", dk)
      elseif pttl == -1 and redis.call("GET", dk) == id then
        redis.call("DEL", dk)
      end
    end
    local field = failed and "failedReason" or "returnvalue"
    local keepCount = tonumber(ARGV[a + 5])
    local atm = 0
    if keepCount ~= 0 or failed then atm = redis.call("HINCRBY", jobKey, "atm", 1) end
    if keepCount ~= 0 then
      local setKey = failed and k.failed or k.completed
      redis.call("ZADD", setKey, nowStr, id)
      if failed then
        redis.call("HSET", jobKey, field, value, "finishedOn", nowStr)
        redis.call("HDEL", jobKey, "defa")
      else
        redis.call("HSET", jobKey, field, value, "finishedOn", nowStr)
      end
      if ARGV[a + 9] == "1" then
        trimSet(setKey, keepCount, tonumber(ARGV[a + 6]), tonumber(ARGV[a + 7]) or 1000)
      end
    else
      ferryWipeJob(jobKey)
    end
    redis.call("XADD", k.events, "*", "event", target, "jobId", id, field, value, "prev", "active")
    if failed and atm >= (tonumber(ARGV[a + 8]) or 0) then
      redis.call("XADD", k.events, "*", "event", "retries-exhausted", "jobId", id,
        "attemptsMade", atm)
    end
    finishedSome = true
  end
  codes[i + 1] = code
end
for from = 1, #released, 7000 do
  redis.call("SREM", k.stalled, unpack(released, from, math.min(from + 6999, #released)))
end

local jobs, ttl, nextDelayed, had = {}, 0, 0, false
local nFetch = tonumber(ARGV[3])
if nFetch > 0 then
  jobs, ttl, nextDelayed, had = ferryFetchJobs(k, base, nowStr, nFetch, ARGV[4],
    tonumber(ARGV[5]), ARGV[6], ARGV[7], ARGV[8], ARGV[9], ARGV[10])
end
if finishedSome and not had and redis.call("LLEN", k.wait) == 0
    and redis.call("LLEN", k.active) == 0 and redis.call("ZCARD", k.prioritized) == 0 then
  redis.call("XADD", k.events, "*", "event", "drained")
end
return {codes, jobs, ttl, nextDelayed}
