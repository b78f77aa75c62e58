-- stop_waiting: end a worker's idle registration (Store.stop_waiting) and
-- release the jobs handed to it that it has not taken from its inbox.
--
-- KEYS[1] prefix: the namespace prefix; idle, inbox and job keys are derived
--                 from it (_base.lua)
-- KEYS[2] leases: running job id -> lease expiry
-- KEYS[3] limkeys: set of flow-control keys
-- ARGV[1] worker id
--
-- Returns the number of handed-off jobs released.

-- every argument is checked before the first write (_check.lua)
check_count(1)
check_str(ARGV[1], 'worker id')

return L.drop_idle(ARGV[1])
