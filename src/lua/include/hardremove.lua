-- hardremove.lua: deleting jobs the way BullMQ 6.7.0's clean and drain do ("hard"
-- removal), for cleanJobsInSet.lua and drain.lua; spliced in after common.lua and flow.lua
-- by "--@include hardremove.lua". No `removed` events: those two write none.

-- Whether job `id` is the pending iteration of a live job scheduler (never cleaned or
-- drained: the scheduler would stop).
local function ferryIsCurrentIteration(id, jobKey, repeatKey)
  local rjk = redis.call("HGET", jobKey, "rjk")
  if not rjk then return false end
  local millis = redis.call("ZSCORE", repeatKey, rjk)
  return millis ~= false and millis ~= nil and id == "repeat:" .. rjk .. ":" .. millis
end

-- A flow child deleted hard leaves its parent's dependencies; when it was the last one
-- and the parent is still waiting for children, a parent in the same queue (`base`) is
-- deleted too (its own parent link handled the same way), while a parent in another queue
-- goes to the end of its wait list, without an event. `childDeid` is the child's
-- deduplication id: BullMQ deletes that id's key in this queue when it deletes the parent
-- (sic: the child's, not the parent's), and so does this.
local function ferryDropFromParentHard(jobKey, base)
  local a = redis.call("HMGET", jobKey, "parentKey", "deid")
  local parentKey, childDeid = a[1], a[2]
  if not parentKey or parentKey == "" or redis.call("EXISTS", parentKey) == 0 then return end
  local depsKey = parentKey .. ":dependencies"
  if redis.call("SREM", depsKey, jobKey) == 0 or redis.call("SCARD", depsKey) > 0 then return end
  local parentBase, parentId = ferrySplitJobKey(parentKey)
  if not parentBase then return end
  if redis.call("ZREM", parentBase .. "waiting-children", parentId) == 0 then return end
  if parentBase == base then
    ferryDropFromParentHard(parentKey, base)
    ferryWipeJob(parentKey)
    if childDeid then redis.call("DEL", base .. "de:" .. childDeid) end
  else
    local blocked = ferryPausedOrMaxed(parentBase .. "meta", parentBase .. "active")
    redis.call("RPUSH", parentBase .. "wait", parentId)
    if not blocked then redis.call("ZADD", parentBase .. "marker", 0, "0") end
  end
end

-- Delete job `id` of the queue `base`: its parent link (above), the deduplication key it
-- owns (and the pending "next" job of that id), its hash and sub-keys. The caller takes
-- the id out of its list or set.
local function ferryHardRemove(base, id)
  local jobKey = base .. id
  ferryDropFromParentHard(jobKey, base)
  local deid = redis.call("HGET", jobKey, "deid")
  if deid and redis.call("GET", base .. "de:" .. deid) == id then
    redis.call("DEL", base .. "de:" .. deid, base .. "dn:" .. deid)
  end
  ferryWipeJob(jobKey)
end

-- ZREM ids from key, in slices that Lua's unpack can take.
local function ferryZremAll(key, ids)
  for from = 1, #ids, 5000 do
    redis.call("ZREM", key, unpack(ids, from, math.min(from + 4999, #ids)))
  end
end
