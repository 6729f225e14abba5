--[[ moveToFinished.lua - finish MANY active jobs in one call (completed and final failures
  mixed; BullMQ 6.7.0 moveToFinished per job), then fetch up to n next jobs (fetchNext).
  Per job, in order, BullMQ's effects: -1 job missing; for completed -4 pending children /
  -9 failed children; lock check (-6 other token, -2 missing; never forced); failed: HSET
  failedReason (+ stacktrace); LREM active (-3 when absent); deduplication key release;
  keepLastIfActive: the job stored in `dn:<deid>` is created (requeueDeduplicatedJob);
  flows (the job has a parentKey): completed -> SREM from the parent's :dependencies, and
  when it was there HSET the parent's :processed and move the parent out of
  waiting-children once no dependency remains; failed -> by the `parent` flags fpof / cpof
  / idof / rdof (see flow.lua); atm + 1; keepJobs (count 0 -> delete the job, and a child
  not dealt with above leaves its parent's dependencies, else ZADD target, HSET value +
  finishedOn, HDEL defa on failed, trim by age/count: trimming the failed set releases the
  parents of trimmed children as BullMQ's removeJob does); event completed|failed; for
  failed with atm >= attempts, event retries-exhausted. Events of a parent go to its own
  queue's stream, before the child's own event.

  Batching changes no per-job effect, only how many commands carry them (each redis.call
  costs Redis about as much as the command itself, so the per-job ones are what matters):
  - the events stream is trimmed once per call, by the first event (XADD MAXLEN ~, where
    BullMQ runs XTRIM just before it);
  - existence, children and lock checks of all jobs (of two or more) are read up front
    with two EXISTS (all job keys: every one exists; the completed jobs' :dependencies and
    :unsuccessful keys: none exists; any other answer falls back to the per-job checks)
    and one MGET; these reads stay valid until a trim wipes other jobs, after which later
    jobs read again (so does a child's failure that writes a parent's :unsuccessful, and a
    re-enqueued job joining a parent's :dependencies);
  - released locks and deleted jobs' keys go in one DEL, and released jobs leave `stalled`
    in one SREM, both before the fetch (nothing in between reads those keys);
  - when `active` is short (at most 2 * N + 64 ids) it is read once and written back
    without the finished ids (same order, last occurrence removed as LREM -1 does) instead
    of one LREM per job;
  - `drained` is emitted once (when some job finished, the fetch found nothing at all and
    wait, active and prioritized are empty), and a deleted job's atm is not incremented
    first (nobody can read it).
  - a run's trim is done early, before the next job that has a parent or a deduplication
    id: its parent and deduplication work must see the sets as BullMQ, which trims after
    each job, leaves them (a trim may drop a child of that parent).
  A batch naming the same job twice runs every check and write per job, in order.
  Each finished job costs one HMGET of its `parentKey` and `parent`, read at finish as
  BullMQ does (a flow may adopt a running job), a child its parent's bookkeeping as well; a
  job with a deduplication id (sent from the fetch: `deid` is written only at add) one
  EXISTS of `dn:`; a job trimmed from the failed set one HGET of its `parentKey`.

  KEYS: 1 wait 2 active 3 prioritized 4 events 5 limiter 6 delayed 7 meta 8 pc 9 marker
        10 stalled 11 completed 12 failed [13 metrics:completed 14 metrics:failed: see
        the metrics argument below]
  ARGV: 1 base  2 now (ms)  3 n to fetch (0 = none)  4 token prefix  5 first token counter
        6 lockDuration  7 worker name ("" none)  8 limiter max ("" none)
        9 limiter duration ("" none)  10 popMany ("1" = Redis >= 6.2)
        11 N jobs to finish (at most 1000), then N groups of 11:
        jobId, token, target (completed|failed), value (returnvalue JSON | failedReason),
        stacktrace JSON ("" = leave), keepCount (-1 keep all, 0 delete, n newest n),
        keepAge in seconds ("" = none; BullMQ's age, fraction included, as "%.17g"),
        keepLimit, attempts, trim ("1" = trim the target set after this job;
        the caller sends "0" when the next job into the same set has the same keep
        settings, so a run of equal settings trims once: see `runs`), deid (the job's `deid`
        field as fetched, "" = none; it is written only when the job is added)
        then, only when the worker collects BullMQ's metrics (Worker option metrics:
        {maxDataPoints}): maxDataPoints (1..100000), with KEYS 13 metrics:completed and
        14 metrics:failed. Absent = no metrics (nothing more is read or written).
  Metrics (BullMQ 6.7.0 collectMetrics, called per finished job at `now`): each job that
  finished (code 0) counts once in its target's hash. All jobs of a call finish at the same
  `now`, so one update per target of n jobs leaves the hash and its :data list exactly as n
  per-job calls: the first job's call may push the data points and move prevTS/prevCount
  to `now` and its own count; the other n - 1 then only count (N = 0).
  Returns {codes, jobs, rateLimitTtl, nextDelayedMs}: codes[i] is 0 or the negative code of
  job i; the rest as moveToActive.lua. ]]
--@include common.lua

--@include fetch.lua

--@include flow.lua

local k = {wait = KEYS[1], active = KEYS[2], prioritized = KEYS[3], events = KEYS[4],
  limiter = KEYS[5], delayed = KEYS[6], meta = KEYS[7], pc = KEYS[8], marker = KEYS[9],
  stalled = KEYS[10], completed = KEYS[11], failed = KEYS[12]}
local base = ARGV[1]
local nowStr = ARGV[2]
local now = tonumber(nowStr)
local nJobs = tonumber(ARGV[11])
local STRIDE = 11
local UNPACK_MAX = 7000 -- stay below Lua's C stack limit for unpack()

if nJobs > 1000 then return redis.error_reply("ERR moveToFinished: more than 1000 jobs") end

local function callChunked(cmd, key, list)
  for from = 1, #list, UNPACK_MAX do
    if key then
      redis.call(cmd, key, unpack(list, from, math.min(from + UNPACK_MAX - 1, #list)))
    else
      redis.call(cmd, unpack(list, from, math.min(from + UNPACK_MAX - 1, #list)))
    end
  end
end

-- meta read once: the fetch's fields and the events stream length (nothing in this script
-- changes them, except ferryMaxEvents writing the default when the length is missing)
local meta = redis.call("HMGET", k.meta, "paused", "concurrency", "max", "duration",
  "opts.maxLenEvents")
local trimEvents = true -- the next event trims the stream
local function addEvent(...)
  if trimEvents then
    trimEvents = false
    return redis.call("XADD", k.events, "MAXLEN", "~", meta[5] or ferryMaxEvents(k.meta), "*", ...)
  end
  return redis.call("XADD", k.events, "*", ...)
end

-- Up-front reads (see the header). `bulk` = no job named twice. For a single job the
-- per-job reads are cheaper than building the combined ones.
local bulk = true
if nJobs > 1 then
  local seen = {}
  for i = 0, nJobs - 1 do
    local id = ARGV[12 + i * STRIDE]
    if seen[id] then bulk = false break end
    seen[id] = true
  end
end
local preread, locks = false, nil
if bulk and nJobs > 1 then
  local jk, ck, lk = {}, {}, {}
  for i = 0, nJobs - 1 do
    local a = 12 + i * STRIDE
    local jobKey = base .. ARGV[a]
    jk[i + 1] = jobKey
    if ARGV[a + 2] ~= "failed" then
      ck[#ck + 1] = jobKey .. ":dependencies"
      ck[#ck + 1] = jobKey .. ":unsuccessful"
    end
    lk[i + 1] = jobKey .. ":lock"
  end
  if redis.call("EXISTS", unpack(jk)) == nJobs
      and (#ck == 0 or redis.call("EXISTS", unpack(ck)) == 0) then
    locks = redis.call("MGET", unpack(lk))
    preread = true
  end
end

-- `active` read once when short (positions of each id, ascending).
local seg, segPos, segGone, segChanged = nil, nil, {}, false
local segRemoved = 0 -- ids marked gone in seg
if bulk and nJobs >= 4 and redis.call("LLEN", k.active) <= 2 * nJobs + 64 then
  seg = redis.call("LRANGE", k.active, 0, -1)
  -- id -> its position, or a list of positions when the id occurs more than once
  segPos = {}
  for p, v in ipairs(seg) do
    local t = segPos[v]
    if not t then
      segPos[v] = p
    elseif type(t) == "number" then
      segPos[v] = {t, p}
    else
      t[#t + 1] = p
    end
  end
end
local function removeFromActive(id)
  if seg then
    local t = segPos[id]
    if not t then return false end
    if type(t) == "number" then
      segPos[id] = nil
      segGone[t] = true
    else
      if #t == 0 then return false end
      segGone[table.remove(t)] = true -- the last occurrence, as LREM -1
    end
    segChanged = true
    segRemoved = segRemoved + 1
    return true
  end
  return redis.call("LREM", k.active, "-1", id) >= 1
end

-- paused or maxed, for a queue this script moves a job into. This queue's meta was read
-- above, and while `active` is kept in `seg` LLEN would still count the jobs finished so far.
local function blocked(qbase)
  if qbase ~= base then return ferryPausedOrMaxed(qbase .. "meta", qbase .. "active") end
  if meta[1] then return true end
  if not meta[2] then return false end
  local len
  if seg then len = #seg - segRemoved else len = redis.call("LLEN", k.active) end
  return len >= tonumber(meta[2])
end
local fc = {now = nowStr, blocked = blocked, event = function(qbase, ...)
  if qbase == base then return addEvent(...) end
  return redis.call("XADD", qbase .. "events", "*", ...)
end}

-- A trimmed job is deleted; a trimmed failed child still in its parent's dependencies (no
-- flag dealt with it) leaves them, as BullMQ's removeJob does. Completed children left
-- their parent when they completed, so the completed set costs no extra read.
local function dropTrimmed(setKey, jid)
  local jobKey = base .. jid
  if setKey == k.failed then
    local pk = redis.call("HGET", jobKey, "parentKey")
    if pk and pk ~= "" then ferryReleaseParent(jobKey, pk, nil, fc) end
  end
  ferryWipeJob(jobKey)
end

-- removeOnComplete / removeOnFail trimming of a whole finished set (BullMQ
-- removeJobsByMaxAge + removeJobsByMaxCount).
local function trimSet(setKey, count, age, limit)
  if age then
    local start = now - age * 1000 -- BullMQ's bound, in the same doubles
    local ids = redis.call("ZREVRANGEBYSCORE", setKey, start, "-inf", "LIMIT", 0, limit)
    for _, jid in ipairs(ids) do dropTrimmed(setKey, jid) end
    if #ids > 0 then
      if #ids < limit then
        redis.call("ZREMRANGEBYSCORE", setKey, "-inf", start)
      else
        callChunked("ZREM", setKey, ids)
      end
    end
  end
  if count > 0 then
    local ids = redis.call("ZREVRANGE", setKey, count, -1)
    for _, jid in ipairs(ids) do dropTrimmed(setKey, jid) end
    redis.call("ZREMRANGEBYRANK", setKey, 0, -(count + 1))
  end
end

-- Trims owed, per finished set: {keepCount, age, limit, jobs}. A run of jobs into one set
-- with equal keep settings trims once, after its last job (the caller marks it); n trims
-- of the same settings leave the set as one does, given `limit` n times over (each BullMQ
-- trim removes at most `limit` expired jobs, the newest first). A run whose last job was
-- refused trims when the next job into the set has other settings, or after the loop.
local runs = {}
local function flushRun(setKey)
  local run = runs[setKey]
  if not run then return end
  runs[setKey] = nil
  trimSet(setKey, run[1], run[2], run[3] * run[4])
  preread = false -- the trim may have wiped jobs of this batch: read again
end

-- keepLastIfActive (BullMQ requeueDeduplicatedJob): the job a duplicate stored in
-- `dn:<deid>` while this one was active is created now, under the stored `jid` (the id
-- counter moves on anyway), owning the deduplication key; stored, placed (delayed,
-- prioritized, or wait by lifo) and announced as an add is; joins the stored parent's
-- dependencies; `dn` is deleted last. Returns whether a parent's dependencies grew.
local function requeueNext(deid)
  local dn = base .. "dn:" .. deid
  if redis.call("EXISTS", dn) == 0 then return false end
  local nd = redis.call("HMGET", dn, "name", "data", "opts", "pk", "pd", "pdk", "rjk", "jid")
  local counted = redis.call("INCR", base .. "id") .. ""
  local newId = nd[8] or counted
  local newKey = base .. newId
  local ok, opts = pcall(cjson.decode, nd[3] or "{}")
  if not ok or type(opts) ~= "table" then opts = {} end
  local de = opts["de"]
  if type(de) ~= "table" then de = nil end
  local dk = base .. "de:" .. deid
  local ttl = de and de["ttl"]
  if de and de["keepLastIfActive"] then
    redis.call("SET", dk, newId) -- no TTL: the key must outlive the job's active time
  elseif type(ttl) == "number" and ttl > 0 then
    redis.call("SET", dk, newId, "PX", ttl)
  else
    redis.call("SET", dk, newId)
  end
  local delay = opts["delay"] or 0
  local priority = opts["priority"] or 0
  local extra = {}
  if nd[4] then
    extra[#extra + 1] = "parentKey"
    extra[#extra + 1] = nd[4]
    if nd[5] then
      extra[#extra + 1] = "parent"
      extra[#extra + 1] = nd[5]
    end
  end
  if nd[7] then
    extra[#extra + 1] = "rjk"
    extra[#extra + 1] = nd[7]
  end
  if de and de["id"] then
    extra[#extra + 1] = "deid"
    extra[#extra + 1] = de["id"]
  end
  local name = nd[1] or ""
  redis.call("HMSET", newKey, "name", name, "data", nd[2] or "{}", "opts", cjson.encode(opts),
    "timestamp", nowStr, "delay", delay, "priority", priority, unpack(extra))
  addEvent("event", "added", "jobId", newId, "name", name)
  local d = tonumber(delay) or 0
  if d ~= 0 then
    local due = now
    if d > 0 then due = now + d end
    redis.call("ZADD", k.delayed, ferryDelayedScore(k.delayed, due), newId)
    addEvent("event", "delayed", "jobId", newId, "delay", due)
    ferrySetDelayMarker(k.marker, k.delayed)
  else
    local isBlocked = blocked(base)
    local p = tonumber(priority) or 0
    if p > 0 then
      redis.call("ZADD", k.prioritized, ferryPrioScore(p, k.pc), newId)
    elseif opts["lifo"] then
      redis.call("RPUSH", k.wait, newId)
    else
      redis.call("LPUSH", k.wait, newId)
    end
    if not isBlocked then redis.call("ZADD", k.marker, 0, "0") end
    addEvent("event", "waiting", "jobId", newId)
  end
  local grew = false
  if nd[6] then grew = redis.call("SADD", nd[6], newKey) == 1 end
  redis.call("DEL", dn) -- last: a failing step above leaves the stored job in place
  return grew
end

-- BullMQ collectMetrics for n jobs finished at `now` into the hash `key` (see the header).
local function collectMetrics(key, n, maxPoints)
  if n == 0 then return end
  local count = redis.call("HINCRBY", key, "count", n) - n -- before the first of the n
  local prevTS = redis.call("HGET", key, "prevTS")
  if not prevTS then
    redis.call("HSET", key, "prevTS", nowStr, "prevCount", 0)
    return
  end
  local N = math.min(math.floor(now / 60000) - math.floor(tonumber(prevTS) / 60000), maxPoints)
  if N > 0 then
    local dataKey = key .. ":data"
    local points = {count - tonumber(redis.call("HGET", key, "prevCount"))}
    for p = 2, N do points[p] = 0 end
    callChunked("LPUSH", dataKey, points)
    redis.call("LTRIM", dataKey, 0, maxPoints - 1)
    redis.call("HSET", key, "prevCount", count, "prevTS", nowStr)
  end
end
local metricsMax = tonumber(ARGV[12 + nJobs * STRIDE]) -- nil: no metrics
local nCompleted, nFailed = 0, 0

local codes = {}
local released = {}
local dels = {} -- keys deleted in one DEL after the loop (bulk only)
local finishedSome = false
for i = 0, nJobs - 1 do
  local a = 12 + i * STRIDE
  local id, token, target, value, stack = ARGV[a], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], ARGV[a + 4]
  local jobKey = base .. id
  local failed = target == "failed"
  local code = 0
  if preread then
    -- exists, and (completed) has no children: known from the up-front EXISTS
  elseif failed then
    if redis.call("EXISTS", jobKey) == 0 then code = -1 end
  else
    -- one EXISTS, the job key counted 3 times: < 3 = missing, > 3 = has children (a set
    -- or zset key exists only while it has members)
    local e = redis.call("EXISTS", jobKey, jobKey, jobKey, jobKey .. ":dependencies",
      jobKey .. ":unsuccessful")
    if e < 3 then
      code = -1
    elseif e > 3 then
      if redis.call("SCARD", jobKey .. ":dependencies") ~= 0 then code = -4 else code = -9 end
    end
  end
  if code == 0 and token ~= "0" then
    local lockKey = jobKey .. ":lock"
    local cur
    if preread then cur = locks[i + 1] else cur = redis.call("GET", lockKey) end
    if cur == token then
      if bulk then dels[#dels + 1] = lockKey else redis.call("DEL", lockKey) end
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
    if not removeFromActive(id) then code = -3 end
  end
  if code == 0 then
    local deid = ARGV[a + 10]
    -- read now, not taken from the fetch: a flow may adopt a job while it runs (BullMQ's
    -- updateExistingJobsParent writes parentKey/parent onto an existing job)
    local pf = redis.call("HMGET", jobKey, "parentKey", "parent")
    local parentKey = pf[1] or ""
    if parentKey ~= "" or deid ~= "" then
      -- BullMQ trims after each job: trims owed by earlier jobs of this batch come before
      -- this job's parent and deduplication work (a trim may drop a child of that parent)
      flushRun(k.completed)
      flushRun(k.failed)
    end
    if deid ~= "" then
      local dk = base .. "de:" .. deid
      local pttl = redis.call("PTTL", dk)
      if pttl == 0 then
        redis.call("DEL", dk)
      elseif pttl == -1 and redis.call("GET", dk) == id then
        redis.call("DEL", dk)
      end
      if requeueNext(deid) then preread = false end
    end
    local settled = false -- its parent dependency was dealt with (or it has no parent)
    if parentKey ~= "" then
      local json = pf[2]
      if failed then
        local wrote
        settled, wrote = ferryChildFailed(fc, jobKey, json, value)
        if wrote then preread = false end
      else
        ferryChildCompleted(fc, jobKey, parentKey, json, value)
        settled = true
      end
    else
      settled = true
    end
    local field = failed and "failedReason" or "returnvalue"
    local keepCount = tonumber(ARGV[a + 5])
    local atm = 0
    if keepCount ~= 0 or failed then atm = redis.call("HINCRBY", jobKey, "atm", 1) end
    if keepCount ~= 0 then
      local setKey = failed and k.failed or k.completed
      local age, limit = tonumber(ARGV[a + 6]), tonumber(ARGV[a + 7]) or 1000
      local run = runs[setKey]
      if run and (run[1] ~= keepCount or run[2] ~= age or run[3] ~= limit) then
        flushRun(setKey) -- its last job was refused: the trim it owed comes before this ZADD
        run = nil
      end
      redis.call("ZADD", setKey, nowStr, id)
      redis.call("HSET", jobKey, field, value, "finishedOn", nowStr)
      if failed then redis.call("HDEL", jobKey, "defa") end
      if run then run[4] = run[4] + 1 else runs[setKey] = {keepCount, age, limit, 1} end
      if ARGV[a + 9] == "1" then flushRun(setKey) end
    elseif bulk then
      local n = #dels
      dels[n + 1] = jobKey
      dels[n + 2] = jobKey .. ":logs"
      dels[n + 3] = jobKey .. ":processed"
      dels[n + 4] = jobKey .. ":failed"
      if failed then
        dels[n + 5] = jobKey .. ":dependencies"
        dels[n + 6] = jobKey .. ":unsuccessful"
      end
      -- (completed: the EXISTS above proved :dependencies and :unsuccessful absent)
      if not settled then ferryReleaseParent(jobKey, parentKey, nil, fc) end
    else
      ferryWipeJob(jobKey)
      if not settled then ferryReleaseParent(jobKey, parentKey, nil, fc) end
    end
    addEvent("event", target, "jobId", id, field, value, "prev", "active")
    if failed and atm >= (tonumber(ARGV[a + 8]) or 0) then
      addEvent("event", "retries-exhausted", "jobId", id, "attemptsMade", atm)
    end
    finishedSome = true
    if failed then nFailed = nFailed + 1 else nCompleted = nCompleted + 1 end
  end
  codes[i + 1] = code
end
if metricsMax then
  collectMetrics(KEYS[13], nCompleted, metricsMax)
  collectMetrics(KEYS[14], nFailed, metricsMax)
end
flushRun(k.completed)
flushRun(k.failed)
local rest = nil
if segChanged then
  rest = {}
  for p, v in ipairs(seg) do
    if not segGone[p] then rest[#rest + 1] = v end
  end
  dels[#dels + 1] = k.active
end
callChunked("DEL", nil, dels)
if rest then callChunked("RPUSH", k.active, rest) end
callChunked("SREM", k.stalled, released)

local jobs, ttl, nextDelayed, had = {}, 0, 0, false
local nFetch = tonumber(ARGV[3])
if nFetch > 0 then
  jobs, ttl, nextDelayed, had = ferryFetchJobs(k, base, nowStr, nFetch, ARGV[4],
    tonumber(ARGV[5]), ARGV[6], ARGV[7], ARGV[8], ARGV[9], ARGV[10], meta)
end
if finishedSome and not had and redis.call("LLEN", k.wait) == 0
    and redis.call("LLEN", k.active) == 0 and redis.call("ZCARD", k.prioritized) == 0 then
  redis.call("XADD", k.events, "*", "event", "drained")
end
return {codes, jobs, ttl, nextDelayed}
