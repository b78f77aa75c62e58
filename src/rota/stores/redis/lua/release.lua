-- release: give running jobs back to their queue without counting the
-- attempt (Store.release, used at shutdown).
--
-- KEYS[1] prefix: the namespace prefix; job, index, ready, limit and signal
--                 keys are derived from it (_base.lua)
-- KEYS[2] leases: running job id -> lease expiry
-- KEYS[3] limkeys: set of flow-control keys
-- ARGV[1] request id, for replay after a reconnect ("" for none)
-- ARGV[2..] job id, token, job id, token, ...
--
-- Returns 1 per job released, 0 where the token no longer holds the job.

local replay = L.replayed(ARGV[1])
if replay then return cjson.decode(replay) end

local FIELDS = {'state', 'token', 'queue', 'priority', 'vtime', 'seq', 'limits', 'sig'}
local now = L.now()
local book = L.book(now)
local reply, wake = {}, {}
for i = 2, #ARGV, 2 do
  local id = ARGV[i]
  local jkey = K.job(id)
  local job = L.fields(jkey, FIELDS)
  if job.state == 'running' and job.token == ARGV[i + 1] then
    if job.limits then book.release(cjson.decode(job.limits), id, nil) end
    redis.call('ZREM', S.leases, id)
    redis.call('HINCRBY', jkey, 'attempt', -1)
    L.put(jkey, {'state', 'queued', 'started_at', false, 'owner', '', 'token', '',
                 'expires', ''})
    L.index_state(id, job.queue, job.seq, 'running', 'queued')
    L.ready_add(id, job.queue, job.priority, job.vtime, job.seq, job.sig)
    wake[job.queue] = (wake[job.queue] or 0) + 1
    reply[#reply + 1] = 1
  else
    reply[#reply + 1] = 0
  end
end
book.save(S.limkeys)
for queue, n in pairs(wake) do L.signal(queue, n) end
L.remember(ARGV[1], cjson.encode(reply))
return reply
