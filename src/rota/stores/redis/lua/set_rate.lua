-- set_rate: override a key's rate at run time (Store.set_rate).
--
-- KEYS[1] prefix: the namespace prefix; limit, waiting, parked, ready and
--                 signal keys are derived from it
-- KEYS[2] limkeys: set of flow-control keys
-- KEYS[3] queues: set of known queues (all are woken: a raised rate may
--                 unblock jobs anywhere)
-- ARGV[1] key
-- ARGV[2] the rate (jobs a second), or "" to clear the override
--
-- Returns 1; 0, with nothing written, for a clear of a key not in limkeys.
-- Sub-queues parked for the key's tokens are put back.

-- every argument is checked before the first write (_check.lua)
check_count(2)
check_str(ARGV[1], 'limit key')
if ARGV[2] ~= '' and check_num(ARGV[2], 'rate', 0, MAX_RATE) == 0 then
  refuse('rate must be above 0', ARGV[2])
end

if ARGV[2] == '' and redis.call('SISMEMBER', S.limkeys, ARGV[1]) == 0 then
  return 0
end
local key = K.limit(ARGV[1])
if ARGV[2] == '' then
  redis.call('HDEL', key, 'rate_override')
else
  redis.call('HSET', key, 'rate_override', ARGV[2])
end
if redis.call('HEXISTS', key, 'running') == 0 then
  redis.call('HSET', key, 'running', 0, 'failures', 0)
end
redis.call('SADD', S.limkeys, ARGV[1])
L.wake_paced(ARGV[1])
L.signal_all(S.queues)
return 1
