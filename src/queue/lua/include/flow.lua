-- flow.lua: flow-parent bookkeeping for the scripts that delete jobs (removeJob.lua,
-- obliterate.lua); spliced in after common.lua by "--@include flow.lua", so the hot
-- fetch/finish scripts do not build a closure for it on every call.

-- A flow child (jobKey) leaves its parent's dependencies; when it was the last one, the parent
-- moves from waiting-children to wait in its queue (event `waiting`), as BullMQ's removal
-- does. A parent in the queue `skipBase` (nil = none) is left alone.
local function ferryReleaseParent(jobKey, parentKey, skipBase)
  local parentId = string.match(parentKey, ":([^:]*)$")
  if not parentId then return end
  local parentBase = string.sub(parentKey, 1, #parentKey - #parentId)
  if parentBase == skipBase or redis.call("EXISTS", parentKey) == 0 then return end
  local depsKey = parentKey .. ":dependencies"
  if redis.call("SREM", depsKey, jobKey) == 0 or redis.call("SCARD", depsKey) > 0 then return end
  if redis.call("ZREM", parentBase .. "waiting-children", parentId) == 0 then return end
  local blocked = ferryPausedOrMaxed(parentBase .. "meta", parentBase .. "active")
  redis.call("RPUSH", parentBase .. "wait", parentId)
  if not blocked then redis.call("ZADD", parentBase .. "marker", 0, "0") end
  redis.call("XADD", parentBase .. "events", "*", "event", "waiting", "jobId", parentId,
    "prev", "waiting-children")
end
