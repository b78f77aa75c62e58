-- extend: renew leases by each job's lease duration (Store.extend).
--
-- KEYS[1] prefix: the namespace prefix; job keys are derived from it (_base.lua)
-- KEYS[2] leases: running job id -> lease expiry
-- ARGV: job id, token, job id, token, ...
--
-- Returns 1 per lease renewed, 2 per lease renewed of a job asked to stop
-- (cancel.lua), 0 where the token no longer holds the job.

-- every argument is checked before the first write (_check.lua)
check_leases(1)

local now = L.now()
local reply = {}
for i = 1, #ARGV, 2 do
  local id = ARGV[i]
  local job = L.fields(K.job(id), {'state', 'token', 'lease', 'cancel_at'})
  if job.state == 'running' and job.token == ARGV[i + 1] then
    local expires = L.fmt(now + L.lease(job.lease))
    redis.call('HSET', K.job(id), 'expires', expires)
    redis.call('ZADD', S.leases, expires, id)
    reply[#reply + 1] = job.cancel_at and 2 or 1
  else
    reply[#reply + 1] = 0
  end
end
return reply
