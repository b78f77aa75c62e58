-- retry_failed: queue failed jobs of a queue and/or task again, one chunk
-- per call (Store.retry_failed).
--
-- KEYS[1] prefix: the namespace prefix; job, index, ready, unique and signal
--                 keys are derived from it (_base.lua)
-- KEYS[2] finished: finished job id -> finished_at
-- ARGV[1] queue ("" for any)
-- ARGV[2] task ("" for any)
-- ARGV[3] most failed jobs to look at in this call
-- ARGV[4] how many failed jobs at the front of the index to skip (jobs of
--         other tasks that earlier calls looked at and left alone)
-- ARGV[5] who asks ("" for no one named)
--
-- A job whose unique key another job holds now stays failed (L.requeue).
-- Returns {jobs queued, jobs looked at}; fewer looked at than ARGV[3] means
-- the index is exhausted.

-- every argument is checked before the first write (_check.lua)
check_count(5)
if ARGV[5] ~= '' then check_str(ARGV[5], 'by') end
check_num(ARGV[3], 'retry chunk', 1, MAX_BATCH, true)
check_num(ARGV[4], 'retry skip', 0, 2 ^ 53, true)

local queue, task, chunk, skip = L.opt(ARGV[1]), L.opt(ARGV[2]), tonumber(ARGV[3]),
                                 tonumber(ARGV[4])
local source = queue and K.qstate(queue, 'failed') or K.state('failed')
local ids = redis.call('ZRANGE', source, skip, skip + chunk - 1)
local now = L.now()
local entry = L.by_hand_entry('requeued', now, L.opt(ARGV[5]))
local done, wake = 0, {}
for _, id in ipairs(ids) do
  if not task or redis.call('HGET', K.job(id), 'task') == task then
    local q = L.requeue(id, now, S.finished, entry)
    if q then
      done = done + 1
      wake[q] = (wake[q] or 0) + 1
    end
  end
end
for q, n in pairs(wake) do L.signal(q, n) end
return {done, #ids}
