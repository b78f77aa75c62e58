-- cancel: cancel jobs (Store.cancel).
--
-- KEYS[1] prefix: the namespace prefix; job, index, ready, delayed and unique
--                 keys are derived from it (_base.lua)
-- KEYS[2] finished: finished job id -> finished_at
-- ARGV[1] who asks ("" for no one named)
-- ARGV[2..] job ids
--
-- Scheduled or queued jobs become cancelled, with who asked in their
-- history, and release their unique key.
-- Running jobs are marked (cancel_at, cancel_by): extend.lua tells their
-- worker, and they end cancelled when their attempt ends (L.end_cancelled).
-- Returns 1 per job cancelled or marked, 0 for finished, already marked or
-- unknown jobs.

-- every argument is checked before the first write (_check.lua)
if ARGV[1] ~= '' then check_str(ARGV[1], 'by') end
check_names(2, 'job id')

local now = L.now()
local entry = L.by_hand_entry('cancelled', now, L.opt(ARGV[1]))
local reply = {}
for i = 2, #ARGV do
  local id = ARGV[i]
  local jkey = K.job(id)
  local job = L.job_fields(jkey, {'state', 'queue', 'task', 'priority', 'seq', 'ukey', 'sig',
                              'cancel_at', 'history'})
  if job.state == 'scheduled' or job.state == 'queued' then
    L.unschedule(id, job)
    redis.call('HSET', jkey, 'state', 'cancelled', 'finished_at', L.fmt(now),
               'history', L.append_json(job.history, entry))
    L.index_state(id, job.queue, job.seq, job.state, 'cancelled')
    redis.call('ZADD', K.task(job.task), job.seq, id) -- (queued jobs are not in it)
    redis.call('ZADD', S.finished, now, id)
    if job.ukey and redis.call('GET', K.unique(job.ukey)) == id then
      redis.call('DEL', K.unique(job.ukey))
    end
    reply[#reply + 1] = 1
  elseif job.state == 'running' and not job.cancel_at then
    L.put(jkey, {'cancel_at', L.fmt(now), 'cancel_by', L.opt(ARGV[1]) or false})
    reply[#reply + 1] = 1
  else
    reply[#reply + 1] = 0
  end
end
return reply
