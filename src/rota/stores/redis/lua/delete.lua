-- delete: remove jobs that are not running (Store.delete).
--
-- KEYS[1] prefix: the namespace prefix; job, index, ready, delayed and unique
--                 keys are derived from it (_base.lua)
-- KEYS[2] finished: finished job id -> finished_at
-- ARGV: job ids
--
-- A deleted pending job releases its unique key; a key held until a
-- deadline (after success) stays held. Returns 1 per job removed, else 0.

-- every argument is checked before the first write (_check.lua)
check_names(1, 'job id')

local reply = {}
for _, id in ipairs(ARGV) do
  local state = redis.call('HGET', K.job(id), 'state')
  if state and state ~= 'running' then
    L.remove_job(id, 'active', S.finished)
    reply[#reply + 1] = 1
  else
    reply[#reply + 1] = 0
  end
end
return reply
