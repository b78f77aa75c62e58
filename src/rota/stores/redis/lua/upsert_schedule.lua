-- upsert_schedule: create or update a schedule by name (Store.upsert_schedule).
--
-- KEYS[1] prefix: the namespace prefix; schedule keys are derived from it
-- KEYS[2] schedules: set of schedule names
-- KEYS[3] schedver: change counter, bumped
-- ARGV[1] name        ARGV[2] task       ARGV[3] trigger (JSON)  ARGV[4] payload
-- ARGV[5] next_fire ("" for None)        ARGV[6] enabled ("1"/"0")
-- ARGV[7] misfire     ARGV[8] grace ("" for None)     ARGV[9] overlap
-- ARGV[10] jitter     ARGV[11] job_options (JSON)
--
-- An update keeps the stored next_fire, last_fire and enabled unless the
-- trigger changed (then next_fire is replaced).

-- every argument is checked before the first write (_check.lua)
check_count(11)
local w = 'schedule ' .. string.format('%q', check_str(ARGV[1], 'schedule name')) .. ': '
check_str(ARGV[2], w .. 'task')
check_str(ARGV[3], w .. 'trigger')
check_opt(ARGV[5], w .. 'next_fire', MIN_TIME, MAX_TIME)
check_flag(ARGV[6], w .. 'enabled')
check_str(ARGV[7], w .. 'misfire')
check_opt(ARGV[8], w .. 'grace', 0, MAX_SECONDS)
check_str(ARGV[9], w .. 'overlap')
check_num(ARGV[10], w .. 'jitter', 0, MAX_SECONDS)
check_str(ARGV[11], w .. 'job_options')

local key = K.schedule(ARGV[1])
local old = redis.call('HGET', key, 'trigger')
local common = {'task', ARGV[2], 'payload', ARGV[4], 'misfire', ARGV[7],
                'grace', L.opt(ARGV[8]) or false, 'overlap', ARGV[9], 'jitter', ARGV[10],
                'job_options', ARGV[11]}
if not old then
  L.put(key, {'name', ARGV[1], 'trigger', ARGV[3], 'next_fire', L.opt(ARGV[5]) or false,
              'enabled', ARGV[6], 'skipped', '0', unpack(common)})
elseif old ~= ARGV[3] then
  L.put(key, {'trigger', ARGV[3], 'next_fire', L.opt(ARGV[5]) or false, unpack(common)})
else
  L.put(key, common)
end
redis.call('SADD', S.schedules, ARGV[1])
redis.call('INCR', S.schedver)
return 1
