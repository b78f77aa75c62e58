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

-- every argument is checked before the first write (_check.lua)
check_count(1)
check_str(ARGV[1], 'worker id')

redis.call('HDEL', S.workers, ARGV[1])
redis.call('ZREM', S.heartbeats, ARGV[1])
return L.drop_idle(ARGV[1])
