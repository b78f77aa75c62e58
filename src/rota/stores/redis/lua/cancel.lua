-- cancel: cancel pending jobs (Store.cancel).
--
-- KEYS[1] prefix: the namespace prefix; job, index, ready, delayed and unique
--                 keys are derived from it (_base.lua)
-- KEYS[2] finished: finished job id -> finished_at
-- ARGV: job ids
--
-- Scheduled or queued jobs become cancelled and release their unique key.
-- Returns 1 per job cancelled, 0 for running, finished or unknown jobs.

-- every argument is checked before the first write (_check.lua)
check_names(1, 'job id')

local now = L.now()
local reply = {}
for _, id in ipairs(ARGV) do
  local jkey = K.job(id)
  local job = L.fields(jkey, {'state', 'queue', 'priority', 'seq', 'ukey', 'sig'})
  if job.state == 'scheduled' or job.state == 'queued' then
    L.unschedule(id, job)
    redis.call('HSET', jkey, 'state', 'cancelled', 'finished_at', L.fmt(now))
    L.index_state(id, job.queue, job.seq, job.state, 'cancelled')
    redis.call('ZADD', S.finished, now, id)
    if job.ukey and redis.call('GET', K.unique(job.ukey)) == id then
      redis.call('DEL', K.unique(job.ukey))
    end
    reply[#reply + 1] = 1
  else
    reply[#reply + 1] = 0
  end
end
return reply
