--[[ retrySelectPage.lua - one page of a selective retry (ferry_queue_retry_selected): the
  members of a finished set that come after a cursor (score, member) in the set's order
  (oldest first; equal scores by member, bytewise), each job's hash matched against the
  selector here, so job data never leaves Redis. Read-only; the matches are then retried
  one by one with reprocessJob.lua.

  The cursor is the last member the previous page looked at. Members removed before it
  (by this retry, removeOnFail trims, Queue.clean) do not move it, so none is skipped: the
  page starts at the first member after (score, member) whether that member is still there
  or not. Finding that start is bounded: ZSCORE + ZRANK when the member is still there at
  its score, else a binary search among the members of that score (O(log n) ZRANGE
  calls), however many share it.

  Reading is bounded too: a job's hash is read only for the fields the selector needs
  (name and timestamp always, to tell a job from a gone one; failedReason only with a
  reason text, data only with a data text), and the page stops early once it has read
  ARGV[10] bytes of fields (always after at least one job).

  KEYS: 1 the set (failed or completed)
  ARGV: 1 key base "<prefix>:<queue>:"  2 cursor score ("" = from the start)
        3 cursor member  4 count (1..1000)  5 max finishedOn (ms)
        6 name  7 "1" when 6 is given  8 failedReason contains ("" = any)
        9 data contains ("" = any)  10 byte budget of the page (>= 1)
  A member whose score is over ARGV[5] ends the walk (finished after the retry started).
  Returns {total, scanned, gone, ended, budget, lastScore, lastMember, matched ids...}:
  total = members with a score <= ARGV[5]; scanned = members looked at; gone = members
  without a job hash (missing, or not a hash); ended = 1 when no member at or under the
  cut-off follows this page; budget = 1 when the page stopped early at its byte budget;
  lastScore, lastMember = the cursor for the next page ("" when nothing was looked at). ]]

local key, base = KEYS[1], ARGV[1]
local afterScore, afterMember = ARGV[2], ARGV[3]
local count, max, budget = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[10])
if not count or not max or not budget or count < 1 or count > 1000 or budget < 1 or
    (afterScore ~= "" and not tonumber(afterScore)) then
  return redis.error_reply("retrySelectPage: bad arguments")
end
local name, hasName, reason, text = ARGV[6], ARGV[7] == "1", ARGV[8], ARGV[9]

-- a > b in a sorted set's member order (bytewise, then the longer one); Lua's own < uses
-- strcoll, which depends on the server's locale
local function after(a, b)
  if a == b then return false end
  local n = math.min(#a, #b)
  for i = 1, n do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x > y end
  end
  return #a > #b
end

local start = 0
if afterScore ~= "" then
  local at = redis.call("ZSCORE", key, afterMember)
  if at and tonumber(at) == tonumber(afterScore) then
    start = redis.call("ZRANK", key, afterMember) + 1
  else
    local lo = redis.call("ZCOUNT", key, "-inf", "(" .. afterScore)
    local ties = redis.call("ZCOUNT", key, afterScore, afterScore)
    local a, b = 0, ties -- the first tie after the cursor member: lo + a
    while a < b do
      local m = math.floor((a + b) / 2)
      local member = redis.call("ZRANGE", key, lo + m, lo + m)[1]
      if member and after(member, afterMember) then b = m else a = m + 1 end
    end
    start = lo + a
  end
end

local fields = {"name", "timestamp"}
if reason ~= "" then fields[#fields + 1] = "failedReason" end
if text ~= "" then fields[#fields + 1] = "data" end
local iReason = reason ~= "" and 3 or nil
local iData = text ~= "" and #fields or nil

local total = redis.call("ZCOUNT", key, "-inf", ARGV[5])
local page = redis.call("ZRANGE", key, start, start + count - 1, "WITHSCORES")
local out = {total, 0, 0, 0, 0, "", ""}
local scanned, gone, bytes, ended, stopped = 0, 0, 0, 0, 0
local lastScore, lastMember = "", ""
if #page < 2 * count then ended = 1 end
for i = 1, #page, 2 do
  local id, score = page[i], page[i + 1]
  if tonumber(score) > max then
    ended = 1
    break
  end
  if bytes >= budget then
    stopped = 1
    ended = 0
    break
  end
  scanned = scanned + 1
  lastScore, lastMember = score, id
  -- pcall: a member whose key is not a hash (a stray id such as "id") is not a job
  local h = redis.pcall("HMGET", base .. id, unpack(fields))
  if h.err or (not h[1] and not h[2]) then
    gone = gone + 1
  else
    for f = 1, #fields do
      if h[f] then bytes = bytes + #h[f] end
    end
    local ok = true
    if hasName and h[1] ~= name then ok = false end
    if ok and iReason and not (h[iReason] and string.find(h[iReason], reason, 1, true)) then
      ok = false
    end
    if ok and iData and not (h[iData] and string.find(h[iData], text, 1, true)) then
      ok = false
    end
    if ok then out[#out + 1] = id end
  end
end
out[2], out[3], out[4], out[5], out[6], out[7] = scanned, gone, ended, stopped, lastScore,
    lastMember
return out
