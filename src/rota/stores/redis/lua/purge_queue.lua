-- purge_queue: delete pending jobs of a queue, one chunk per call
-- (Store.purge_queue).
--
-- KEYS[1] prefix: the namespace prefix; job, index, ready, delayed and unique
--                 keys are derived from it (_base.lua)
-- KEYS[2] seq: job sequence counter
-- KEYS[3] finished: finished job id -> finished_at
-- ARGV[1] queue
-- ARGV[2] highest sequence to purge ("" on the first call: the current one,
--         so jobs sent while purging survive)
-- ARGV[3] most jobs to delete in this call
--
-- Returns {jobs deleted, the sequence bound, 1 if more may remain else 0}.

-- every argument is checked before the first write (_check.lua)
check_count(3)
check_str(ARGV[1], 'queue')
check_opt(ARGV[2], 'sequence bound', 0, 2 ^ 53, true)
check_num(ARGV[3], 'purge chunk', 1, MAX_BATCH, true)

local queue, chunk = ARGV[1], tonumber(ARGV[3])
local bound = L.opt(ARGV[2]) or (redis.call('GET', S.seq) or '0')
local removed = 0
for _, state in ipairs({'scheduled', 'queued'}) do
  local room = chunk - removed
  if room > 0 then
    local ids
    if state == 'queued' then
      ids = L.queued_ids(queue, bound, room)
    else
      ids = redis.call('ZRANGEBYSCORE', K.qstate(queue, state), '-inf', bound, 'LIMIT', 0, room)
    end
    for _, id in ipairs(ids) do
      if L.remove_job(id, 'any', S.finished) then removed = removed + 1 end
    end
  end
end
return {removed, bound, removed == chunk and 1 or 0}
