-- recover: handle expired leases (Store.recover).
--
-- KEYS[1] prefix: the namespace prefix; job, index, ready, limit, unique and
--                 signal keys are derived from it (_base.lua)
-- KEYS[2] leases: running job id -> lease expiry
-- KEYS[3] finished: finished job id -> finished_at
-- KEYS[4] limkeys: set of flow-control keys
-- KEYS[5] totals: all-time counts
-- KEYS[6] workers: worker id -> heartbeat record (the host of a lease owner)
-- KEYS[7] paused: set of paused queues
-- KEYS[8] debug: set of queues in debug mode
-- KEYS[9] debugjob: queue -> the failed job that paused it in debug mode
-- ARGV[1] most jobs to recover in this call
--
-- Each job whose lease expired before now records a lost attempt (with the
-- worker that held the lease and its host) and frees
-- its limit slots. Under its max_lost it is queued again; at it, it ends
-- failed with error "worker_lost", counted as a failure in the stats; that
-- failure pauses a queue in debug mode (a lost attempt that is queued again
-- does not: it is not the task's failure). A job asked to stop (cancel.lua)
-- ends cancelled instead.
-- Returns the ids of the jobs recovered.

-- every argument is checked before the first write (_check.lua)
check_count(1)
check_num(ARGV[1], 'recover batch', 1, MAX_BATCH, true)

local FIELDS = {'state', 'queue', 'task', 'priority', 'vtime', 'seq', 'limits', 'attempt',
                'lost', 'max_lost', 'owner', 'history', 'ukey', 'ufor', 'enqueued_at', 'sig',
                'cancel_at', 'cancel_by'}
local now = L.now()
local expired = redis.call('ZRANGEBYSCORE', S.leases, '-inf', '(' .. L.fmt(now),
                           'LIMIT', 0, tonumber(ARGV[1]))
if #expired == 0 then return {} end
local book = L.book(now)
local wake, recovered, failed, hosts = {}, {}, {}, {}
local stamp = L.fmt(now)
for _, id in ipairs(expired) do
  local jkey = K.job(id)
  local job = L.job_fields(jkey, FIELDS)
  redis.call('ZREM', S.leases, id)
  if job.state == 'running' and job.cancel_at then -- asked to stop: it ends cancelled
    recovered[#recovered + 1] = id
    L.end_cancelled(id, job, now, hosts, book)
  elseif job.state == 'running' then
    recovered[#recovered + 1] = id
    if job.limits then book.release(cjson.decode(job.limits), id, nil) end
    local entry = L.attempt_entry(job, 'lost', stamp, hosts)
    local lost = tonumber(job.lost) + 1
    local final = lost >= tonumber(job.max_lost)
    local fields = {'lost', lost, 'run_at', stamp, 'enqueued_at', job.enqueued_at,
                    'history', L.append_json(job.history, entry),
                    'owner', '', 'token', '', 'expires', ''}
    if final then
      L.settle_unique(id, job, false, now)
      L.debug_pause(job.queue, id)
      L.put(jkey, {'state', 'failed', 'error', 'worker_lost', 'finished_at', stamp,
                   unpack(fields)})
      L.index_state(id, job.queue, job.seq, 'running', 'failed')
      redis.call('ZADD', S.finished, now, id)
      local field = L.stats_field(false, job.queue, job.task)
      failed[field] = (failed[field] or 0) + 1
    else
      L.put(jkey, {'state', 'queued', 'error', false, 'finished_at', false, unpack(fields)})
      L.index_state(id, job.queue, job.seq, 'running', 'queued')
      L.ready_add(id, job.queue, job.priority, job.vtime, job.seq, job.sig)
      wake[job.queue] = (wake[job.queue] or 0) + 1
    end
  end
end
book.save(S.limkeys)
L.count_stats(failed, now, S.totals)
for queue, n in pairs(wake) do L.signal(queue, n) end
return recovered
