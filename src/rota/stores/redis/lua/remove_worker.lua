-- remove_worker: forget a worker that stopped cleanly (Store.remove_worker):
-- end its idle registration and release the jobs handed to it that it never
-- took from its inbox.
--
-- KEYS[1] prefix: the namespace prefix; idle, inbox and job keys are derived
--                 from it (_base.lua)
-- KEYS[2] workers: worker id -> heartbeat record
-- KEYS[3] heartbeats: worker id -> last heartbeat time
-- KEYS[4] leases: running job id -> lease expiry
-- KEYS[5] limkeys: set of flow-control keys
-- ARGV[1] worker id
--
-- Returns the number of handed-off jobs released.

local worker = ARGV[1]
redis.call('HDEL', S.workers, worker)
redis.call('ZREM', S.heartbeats, worker)
L.unidle(worker)
local _, held = L.take_inbox(worker)
if #held == 0 then return 0 end
local book = L.book(L.now())
local wake, released = {}, 0
for i = 1, #held, 2 do
  if L.release(held[i], held[i + 1], book, wake) then released = released + 1 end
end
book.save(S.limkeys)
for queue, n in pairs(wake) do L.signal(queue, n) end
return released
