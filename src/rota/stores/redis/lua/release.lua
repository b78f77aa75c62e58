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

-- every argument is checked before the first write (_check.lua)
check_leases(2)

local replay = L.replayed(ARGV[1])
if replay then return cjson.decode(replay) end

local book = L.book(L.now())
local reply, wake = {}, {}
for i = 2, #ARGV, 2 do
  reply[#reply + 1] = L.release(ARGV[i], ARGV[i + 1], book, wake) and 1 or 0
end
book.save(S.limkeys)
for queue, n in pairs(wake) do L.signal(queue, n) end
L.remember(ARGV[1], cjson.encode(reply))
return reply
