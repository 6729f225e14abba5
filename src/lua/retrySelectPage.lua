--[[ retrySelectPage.lua - one page of a selective retry (ferry_queue_retry_selected): the
  members of a finished set at positions start..start+count-1 (oldest first), each job's
  hash matched against the selector here, so job data never leaves Redis. Read-only; the
  matches are then retried one by one with reprocessJob.lua.

  KEYS: 1 the set (failed or completed)
  ARGV: 1 key base "<prefix>:<queue>:"  2 start  3 count (1..1000)  4 max finishedOn (ms)
        5 name ("" = any)  6 "1" when 5 is given  7 failedReason contains ("" = any)
        8 data contains ("" = any)
  A member whose score is over ARGV[4] ends the page (finished after the retry started).
  Returns {total, scanned, past, gone, matched ids...}: total = members with a score <=
  ARGV[4]; scanned = members looked at; past = 1 when a member past the cut-off was met;
  gone = members without a job hash (missing, or
  not a hash). ]]

local key, base = KEYS[1], ARGV[1]
local start, count, max = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
if not start or not count or not max or start < 0 or count < 1 or count > 1000 then
  return redis.error_reply("retrySelectPage: bad arguments")
end
local name, hasName, reason, text = ARGV[5], ARGV[6] == "1", ARGV[7], ARGV[8]

local total = redis.call("ZCOUNT", key, "-inf", ARGV[4])
local page = redis.call("ZRANGE", key, start, start + count - 1, "WITHSCORES")
local out = {total, 0, 0, 0}
local scanned, gone = 0, 0
for i = 1, #page, 2 do
  local id, score = page[i], tonumber(page[i + 1])
  if score > max then
    out[3] = 1
    break
  end
  scanned = scanned + 1
  -- pcall: a member whose key is not a hash (a stray id such as "id") is not a job
  local h = redis.pcall("HMGET", base .. id, "name", "failedReason", "data", "timestamp")
  if h.err or (not h[1] and not h[3] and not h[4]) then
    gone = gone + 1
  else
    local ok = true
    if hasName and h[1] ~= name then ok = false end
    if ok and reason ~= "" and not (h[2] and string.find(h[2], reason, 1, true)) then ok = false end
    if ok and text ~= "" and not (h[3] and string.find(h[3], text, 1, true)) then ok = false end
    if ok then out[#out + 1] = id end
  end
end
out[2] = scanned
out[4] = gone
return out
