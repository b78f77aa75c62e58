-- release: give running jobs back to their queue without counting the
-- attempt (Store.release, used at shutdown).
--
-- KEYS[1] prefix: the namespace prefix; job, index, ready, limit and signal
--                 keys are derived from it (_base.lua)
-- KEYS[2] leases: running job id -> lease expiry
-- KEYS[3] limkeys: set of flow-control keys
-- KEYS[4] workers: worker id -> heartbeat record (the host of a lease owner)
-- KEYS[5] finished: finished job id -> finished_at
-- ARGV[1] request id, for replay after a reconnect ("" for none)
-- ARGV[2..] job id, token, job id, token, ...
--
-- Each job released appends the attempt to its history as "released", with
-- the worker that held the lease and its host.
-- A job asked to stop (cancel.lua) ends cancelled instead.
-- Returns "1" per job released, "0" where the token no longer holds the job
-- (strings, as finish.lua's).

-- every argument is checked before the first write (_check.lua)
check_leases(2)

local replay = L.replayed(ARGV[1])
if replay then return cjson.decode(replay) end

local now = L.now()
local book = L.book(now)
local stamp = L.fmt(now)
local reply, wake, hosts = {}, {}, {}
for i = 2, #ARGV, 2 do
  local jkey = K.job(ARGV[i])
  local job = L.job_fields(jkey, {'attempt', 'owner', 'history', 'state', 'token', 'queue', 'seq',
                              'limits', 'ukey', 'cancel_at', 'cancel_by'})
  if job.cancel_at and job.state == 'running' and job.token == ARGV[i + 1] then
    L.end_cancelled(ARGV[i], job, now, hosts, book)
    reply[#reply + 1] = '1'
  elseif L.release(ARGV[i], ARGV[i + 1], book, wake) then
    local entry = L.attempt_entry(job, 'released', stamp, hosts)
    redis.call('HSET', jkey, 'history', L.append_json(job.history, entry))
    reply[#reply + 1] = '1'
  else
    reply[#reply + 1] = '0'
  end
end
book.save(S.limkeys)
for queue, n in pairs(wake) do L.signal(queue, n) end
L.remember(ARGV[1], cjson.encode(reply))
return reply
