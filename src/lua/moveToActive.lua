--[[ moveToActive.lua - fetch up to n jobs in one call (BullMQ 6.7.0 moveToActive, batched).
  Each fetched job gets exactly BullMQ's per-job effects: its own lock token (SET PX),
  `active` event, processedOn (+ pb), ats + 1, counted by the rate limiter (unless it has
  `defa`); due delayed jobs are promoted once per call; meta.concurrency and the limiter
  cap how many are taken; marker "0" is re-added after a successful fetch.
  The fetch itself is include/fetch.lua, shared with moveToFinished.lua.

  KEYS: 1 wait 2 active 3 prioritized 4 events 5 limiter 6 delayed 7 meta 8 pc 9 marker
  ARGV: 1 base "<prefix>:<queue>:"  2 now (ms)  3 n (max jobs, >= 1)
        4 token prefix ("<uuid>:")  5 first token counter (job i gets counter + i - 1)
        6 lockDuration (ms)  7 worker name ("" = none)
        8 worker limiter max ("" = none)  9 worker limiter duration ("" = none)
        10 popMany ("1" when the server has RPOP with a count, Redis >= 6.2)
  Returns {jobs, rateLimitTtl, nextDelayedMs} where jobs = {id1, HGETALL1, id2, ...};
  rateLimitTtl > 0 when rate limited: with no job, the limiter was already exhausted; with
  jobs, this fetch used up the window (the caller waits instead of asking again).
  With no job and no limit, nextDelayedMs = due time of the first delayed job (0 when none,
  or when paused/maxed). ]]
--@include common.lua

--@include fetch.lua

local k = {wait = KEYS[1], active = KEYS[2], prioritized = KEYS[3], events = KEYS[4],
  limiter = KEYS[5], delayed = KEYS[6], meta = KEYS[7], pc = KEYS[8], marker = KEYS[9]}
local jobs, ttl, nextDelayed = ferryFetchJobs(k, ARGV[1], ARGV[2], tonumber(ARGV[3]),
  ARGV[4], tonumber(ARGV[5]), ARGV[6], ARGV[7], ARGV[8], ARGV[9], ARGV[10])
return {jobs, ttl, nextDelayed}
