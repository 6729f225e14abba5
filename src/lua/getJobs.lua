--[[ getJobs.lua - one page of the jobs of one state, as BullMQ 6.7.0's Queue.getJobs([state],
  start, end, asc) pages them (its script of the same name): positions start..end of the
  state's list or sorted set (newest first: lists from the head, sets by descending score;
  asc = oldest first), ids whose job hash is gone skipped, and the page filled up again from
  the positions after it, for at most `rounds` further reads. Read-only: unlike BullMQ, a
  legacy (pre-v5) marker at the tail of wait is skipped (it has no hash) but not deleted.

  KEYS: 1 the state's key ("<base>wait", "<base>completed", ...)
  ARGV: 1 base  2 "list" or "zset"  3 start (>= 0)  4 end (>= start)  5 "1" = asc
        6 rounds (reads at most)
  Returns the ids of the page whose job exists, in page order. ]]

local key, base, kind = KEYS[1], ARGV[1], ARGV[2]
local first, last = tonumber(ARGV[3]), tonumber(ARGV[4])
local asc, rounds = ARGV[5] == "1", tonumber(ARGV[6])
if not first or not last or first < 0 or last < first or not rounds then
  return redis.error_reply("getJobs: bad range")
end

-- positions from..to, in page order
local function slice(from, to)
  if kind == "list" then
    if not asc then return redis.call("LRANGE", key, from, to) end
    -- oldest first: read from the tail, then turn around (past the list's length the
    -- range is empty, as LRANGE clamps the start to the head and the end stays before it)
    local ids = redis.call("LRANGE", key, -(to + 1), -(from + 1))
    local out = {}
    for i = #ids, 1, -1 do out[#out + 1] = ids[i] end
    return out
  end
  if asc then return redis.call("ZRANGE", key, from, to) end
  return redis.call("ZREVRANGE", key, from, to)
end

local want = last - first + 1
local page = {}
local cursor = first
for _ = 1, rounds do
  if #page >= want then break end
  local ids = slice(cursor, cursor + want - 1)
  if #ids == 0 then break end
  for _, id in ipairs(ids) do
    if #page >= want then break end
    if redis.call("EXISTS", base .. id) == 1 then page[#page + 1] = id end
  end
  cursor = cursor + #ids
end
return page
