-- set_schedule_enabled: pause or resume a schedule (Store.set_schedule_enabled).
--
-- KEYS[1] prefix: the namespace prefix; schedule keys are derived from it
-- KEYS[2] schedver: change counter, bumped
-- ARGV[1] name
-- ARGV[2] "1" to enable, "0" to disable
--
-- Returns 1 if the schedule exists, else 0.

-- every argument is checked before the first write (_check.lua)
check_count(2)
check_str(ARGV[1], 'schedule name')
check_flag(ARGV[2], 'enabled')

local key = K.schedule(ARGV[1])
local found = redis.call('EXISTS', key)
if found == 1 then redis.call('HSET', key, 'enabled', ARGV[2]) end
redis.call('INCR', S.schedver)
return found
