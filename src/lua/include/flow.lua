-- flow.lua: flow-parent bookkeeping for the scripts that delete jobs (removeJob.lua,
-- obliterate.lua) and for moveToFinished.lua (a child finishing moves its parent on);
-- spliced in after common.lua by "--@include flow.lua", so the fetch script does not
-- build closures for it on every call.

-- "<prefix>:<queue>:<id>" -> "<prefix>:<queue>:", "<id>" (nil when there is no ':').
local function ferrySplitJobKey(jobKey)
  local id = string.match(jobKey, ".*:(.*)")
  if not id then return nil, nil end
  return string.sub(jobKey, 1, #jobKey - #id), id
end

-- A flow child (jobKey) deleted (removed, obliterated, or deleted at finish by
-- removeOnComplete/removeOnFail or a trim) leaves its parent's dependencies; when it was the
-- last one, the parent moves from waiting-children to the end of wait in its queue, whatever
-- its priority or delay (event `waiting`), as BullMQ's removeParentDependencyKey does. A
-- parent in the queue `skipBase` (nil = none) is left alone. fc: the finishing script's
-- context (below), for its view of paused/maxed and its events; nil elsewhere.
local function ferryReleaseParent(jobKey, parentKey, skipBase, fc)
  local parentBase, parentId = ferrySplitJobKey(parentKey)
  if not parentBase then return end
  if parentBase == skipBase or redis.call("EXISTS", parentKey) == 0 then return end
  local depsKey = parentKey .. ":dependencies"
  if redis.call("SREM", depsKey, jobKey) == 0 or redis.call("SCARD", depsKey) > 0 then return end
  if redis.call("ZREM", parentBase .. "waiting-children", parentId) == 0 then return end
  local blocked
  if fc then
    blocked = fc.blocked(parentBase)
  else
    blocked = ferryPausedOrMaxed(parentBase .. "meta", parentBase .. "active")
  end
  redis.call("RPUSH", parentBase .. "wait", parentId)
  if not blocked then redis.call("ZADD", parentBase .. "marker", 0, "0") end
  if fc then
    fc.event(parentBase, "event", "waiting", "jobId", parentId, "prev", "waiting-children")
  else
    redis.call("XADD", parentBase .. "events", "*", "event", "waiting", "jobId", parentId,
      "prev", "waiting-children")
  end
end

-- ---- a flow child finishing (moveToFinished.lua; BullMQ 6.7.0's effects) ---------------
-- `fc` is the finishing script's context: fc.now (ms, text), fc.blocked(qbase) (that
-- queue is paused or at its global concurrency) and fc.event(qbase, ...) (XADD to that
-- queue's events). qbase = "<prefix>:<queue>:"; the parent's queue may differ from the
-- child's.

-- The `parent` JSON of a child, or nil when absent or not an object with id and queueKey
-- strings (BullMQ would raise a script error; a batch must not fail for one bad job).
local function ferryParentData(json)
  if not json then return nil end
  local ok, p = pcall(cjson.decode, json)
  if not ok or type(p) ~= "table" or type(p.id) ~= "string" or type(p.queueKey) ~= "string" then
    return nil
  end
  return p
end

-- BullMQ moveParentToWait: a parent with `delay` goes to delayed (due now + delay, score
-- without sequence, event delayed), else to prioritized (its `priority`) or the end of
-- wait, with the marker unless the queue is paused or maxed and event waiting.
local function ferryParentToWait(fc, qbase, parentKey, parentId)
  local a = redis.call("HMGET", parentKey, "priority", "delay")
  local priority = tonumber(a[1]) or 0
  local delay = tonumber(a[2]) or 0
  if delay > 0 then
    local due = tonumber(fc.now) + delay
    redis.call("ZADD", qbase .. "delayed", due * 4096, parentId)
    fc.event(qbase, "event", "delayed", "jobId", parentId, "delay", due)
    ferrySetDelayMarker(qbase .. "marker", qbase .. "delayed")
    return
  end
  local blocked = fc.blocked(qbase)
  if priority == 0 then
    redis.call("RPUSH", qbase .. "wait", parentId)
  else
    redis.call("ZADD", qbase .. "prioritized", ferryPrioScore(priority, qbase .. "pc"), parentId)
  end
  if not blocked then redis.call("ZADD", qbase .. "marker", 0, "0") end
  fc.event(qbase, "event", "waiting", "jobId", parentId, "prev", "waiting-children")
end

-- BullMQ moveParentToWaitIfNeeded: only an existing parent still in waiting-children moves.
local function ferryParentLeavesWaitingChildren(fc, qbase, parentKey, parentId)
  if redis.call("EXISTS", parentKey) == 1
      and redis.call("ZREM", qbase .. "waiting-children", parentId) == 1 then
    ferryParentToWait(fc, qbase, parentKey, parentId)
  end
end

-- ... when it has no dependencies left (moveParentToWaitIfNoPendingDependencies).
local function ferryParentIfNoDeps(fc, qbase, parentKey, parentId)
  if redis.call("SCARD", parentKey .. ":dependencies") == 0 then
    ferryParentLeavesWaitingChildren(fc, qbase, parentKey, parentId)
  end
end

-- A child completed: it leaves the parent's dependencies, its return value goes to the
-- parent's :processed, and the parent moves on when it was the last one. parentKey is the
-- child's `parentKey` field, json its `parent` field (may be nil).
local function ferryChildCompleted(fc, childKey, parentKey, json, value)
  local p = ferryParentData(json)
  local qbase, parentId
  if p then
    qbase, parentId = p.queueKey .. ":", p.id
  else
    qbase, parentId = ferrySplitJobKey(parentKey)
    if not qbase then return end
  end
  if redis.call("SREM", parentKey .. ":dependencies", childKey) == 1 then
    redis.call("HSET", parentKey .. ":processed", childKey, value)
    ferryParentIfNoDeps(fc, qbase, parentKey, parentId)
  end
end

-- A child failed for good (BullMQ moveChildFromDependenciesIfNeeded), by the flags of its
-- `parent` JSON: fpof -> :unsuccessful and the parent, out of waiting-children or delayed,
-- moves to wait with `defa` so it fails when fetched (a parent elsewhere, not failed, just
-- gets `defa`); cpof -> :failed and the parent moves on; idof -> :failed, and the parent
-- moves on when no dependencies remain; rdof -> the latter without :failed. Returns
-- flagged (one of the flags was set: the dependency was dealt with) and whether an
-- :unsuccessful set was written.
local function ferryChildFailed(fc, childKey, json, reason)
  local p = ferryParentData(json)
  if not p then return false, false end
  local qbase, parentId = p.queueKey .. ":", p.id
  local parentKey = qbase .. parentId
  local deps = parentKey .. ":dependencies"
  if p.fpof then
    if redis.call("SREM", deps, childKey) == 1 then
      redis.call("ZADD", parentKey .. ":unsuccessful", fc.now, childKey)
      if redis.call("EXISTS", parentKey) == 1 then
        local from
        if redis.call("ZSCORE", qbase .. "waiting-children", parentId) then
          from = qbase .. "waiting-children"
        elseif redis.call("ZSCORE", qbase .. "delayed", parentId) then
          from = qbase .. "delayed"
          redis.call("HSET", parentKey, "delay", 0)
        end
        local defa = "child " .. childKey .. " failed"
        if from then
          redis.call("ZREM", from, parentId)
          redis.call("HSET", parentKey, "defa", defa)
          ferryParentToWait(fc, qbase, parentKey, parentId)
        elseif not redis.call("ZSCORE", qbase .. "failed", parentId) then
          redis.call("HSET", parentKey, "defa", defa)
        end
      end
      return true, true
    end
    return true, false
  elseif p.cpof then
    if redis.call("SREM", deps, childKey) == 1 then
      redis.call("HSET", parentKey .. ":failed", childKey, reason)
      ferryParentLeavesWaitingChildren(fc, qbase, parentKey, parentId)
    end
    return true, false
  elseif p.idof or p.rdof then
    if redis.call("SREM", deps, childKey) == 1 then
      ferryParentIfNoDeps(fc, qbase, parentKey, parentId)
      if p.idof then redis.call("HSET", parentKey .. ":failed", childKey, reason) end
    end
    return true, false
  end
  return false, false
end
