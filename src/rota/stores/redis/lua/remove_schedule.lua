-- remove_schedule: delete a schedule (Store.remove_schedule).
--
-- KEYS[1] prefix: the namespace prefix; schedule keys are derived from it
-- KEYS[2] schedules: set of schedule names
-- KEYS[3] schedver: change counter, bumped
-- ARGV[1] name
--
-- Returns 1 if it existed, else 0.

-- every argument is checked before the first write (_check.lua)
check_count(1)
check_str(ARGV[1], 'schedule name')

local removed = redis.call('DEL', K.schedule(ARGV[1]))
redis.call('SREM', S.schedules, ARGV[1])
redis.call('INCR', S.schedver)
return removed
