-- retry_failed: queue failed jobs of a queue and/or task again, one chunk
-- per call (Store.retry_failed).
--
-- KEYS[1] prefix: the namespace prefix; job, index, ready, unique and signal
--                 keys are derived from it (_base.lua)
-- KEYS[2] finished: finished job id -> finished_at
-- KEYS[3] seq: job sequence counter
-- ARGV[1] queue ("" for any)
-- ARGV[2] task ("" for any)
-- ARGV[3] most failed jobs to look at in this call
-- ARGV[4] the sequence after which to look ("" on the first call: from the
--         start); the failed index is scored by sequence, so each job is
--         looked at once however the index changes between calls
-- ARGV[5] who asks ("" for no one named)
-- ARGV[6] highest sequence to look at ("" on the first call: the current one)
-- ARGV[7] latest finished_at of a job to retry ("" on the first call: now)
--
-- ARGV[6] and ARGV[7] fix, at the first call, the set of failed jobs a
-- command retries: a job sent, or failed (again), after it began is left
-- failed, so no job is retried twice by one command.
-- A job whose unique key another job holds now stays failed (L.requeue).
-- Returns {jobs queued, jobs looked at, the sequence of the last one looked
-- at ("" for none), the sequence bound, the finished_at bound}; fewer looked
-- at than ARGV[3] means the index is exhausted.

-- every argument is checked before the first write (_check.lua)
check_count(7)
if ARGV[5] ~= '' then check_str(ARGV[5], 'by') end
check_num(ARGV[3], 'retry chunk', 1, MAX_BATCH, true)
check_opt(ARGV[4], 'retry cursor', 0, 2 ^ 53, true)
check_opt(ARGV[6], 'sequence bound', 0, 2 ^ 53, true)
check_opt(ARGV[7], 'finished bound', 0, 2 ^ 53, false)

local queue, task, chunk = L.opt(ARGV[1]), L.opt(ARGV[2]), tonumber(ARGV[3])
local now = L.now()
local bound = L.opt(ARGV[6]) or (redis.call('GET', S.seq) or '0')
local until_time = L.opt(ARGV[7]) or L.fmt(now)
local after = L.opt(ARGV[4])
local source = queue and K.qstate(queue, 'failed') or K.state('failed')
local low = after and ('(' .. after) or '-inf'
local found = redis.call('ZRANGEBYSCORE', source, low, bound, 'WITHSCORES', 'LIMIT', 0, chunk)
local entry = L.by_hand_entry('requeued', now, L.opt(ARGV[5]))
local limit = tonumber(until_time)
local done, wake, last = 0, {}, ''
for i = 1, #found, 2 do
  local id = found[i]
  last = found[i + 1]
  local finished = tonumber(redis.call('ZSCORE', S.finished, id))
  if (not finished or finished <= limit)
      and (not task or redis.call('HGET', K.job(id), 'task') == task) then
    local q = L.requeue(id, now, S.finished, entry)
    if q then
      done = done + 1
      wake[q] = (wake[q] or 0) + 1
    end
  end
end
for q, n in pairs(wake) do L.signal(q, n) end
return {done, #found / 2, last, bound, until_time}
