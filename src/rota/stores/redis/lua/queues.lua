-- queues: every queue that has jobs or is not running, with its mode and job
-- counts by state (Store.queues).
-- Read only; counts come from index sizes, never from scanning jobs.
--
-- KEYS[1] prefix: the namespace prefix; index and delayed keys are derived from it
-- KEYS[2] queues: set of known queues
-- KEYS[3] paused: set of paused queues
-- KEYS[4] debug: set of queues in debug mode
-- KEYS[5] debugjob: queue -> the failed job that paused it in debug mode
-- ARGV: none
--
-- Returns per queue: name, mode (running, paused or debug), the linked job
-- ("" for none), then the counts of scheduled, queued, running, succeeded,
-- failed, cancelled; scheduled jobs whose run time has come are counted as
-- queued.

local STATES = {'scheduled', 'queued', 'running', 'succeeded', 'failed', 'cancelled'}
local now = L.fmt(L.now())
local reply = {}
for _, queue in ipairs(redis.call('SMEMBERS', S.queues)) do
  local mode = 'running'
  if redis.call('SISMEMBER', S.paused, queue) == 1 then
    mode = 'paused'
  elseif redis.call('SISMEMBER', S.debug, queue) == 1 then
    mode = 'debug'
  end
  local counts, total = {}, 0
  for i, state in ipairs(STATES) do
    if state == 'queued' then
      counts[i] = L.queued_count(queue)
    else
      counts[i] = redis.call('ZCARD', K.qstate(queue, state))
    end
    total = total + counts[i]
  end
  if total > 0 or mode ~= 'running' then
    local due = redis.call('ZCOUNT', K.delayed(queue), '-inf', now)
    counts[1] = counts[1] - due
    counts[2] = counts[2] + due
    reply[#reply + 1] = queue
    reply[#reply + 1] = mode
    reply[#reply + 1] = redis.call('HGET', S.debugjob, queue) or ''
    for i = 1, #STATES do reply[#reply + 1] = counts[i] end
  end
end
return reply
