--[[ addLog.lua - one line appended to a job's log, as BullMQ 6.7.0's Job.log and
  Queue.addJobLog do (its script of the same name): the job must exist; RPUSH to
  <job>:logs; with a keep count, only the newest that many lines stay.

  KEYS: 1 job hash  2 its :logs list
  ARGV: 1 the line  2 keep: "" = every line, "job" = the job's own keepLogs option (stored
        opts "kl"; absent, 0 or not a positive integer = every line), or N >= 1
  Returns how many lines the log holds now (at most the keep count), -1 no such job. ]]

local jobKey, logsKey = KEYS[1], KEYS[2]
if redis.call("EXISTS", jobKey) == 0 then return -1 end
local keep = ARGV[2]
if keep == "job" then
  keep = nil
  local text = redis.call("HGET", jobKey, "opts")
  local ok, opts = pcall(cjson.decode, text or "")
  if ok and type(opts) == "table" and type(opts.kl) == "number" and opts.kl >= 1 and
    opts.kl == math.floor(opts.kl) then
    keep = opts.kl
  end
else
  keep = tonumber(keep)
end
local count = redis.call("RPUSH", logsKey, ARGV[1])
if keep then
  redis.call("LTRIM", logsKey, -keep, -1)
  return math.min(keep, count)
end
return count
