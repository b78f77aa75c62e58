-- set_limit: override a key's concurrency limit at run time (Store.set_limit).
--
-- KEYS[1] prefix: the namespace prefix; limit, waiting, parked, ready and
--                 signal keys are derived from it
-- KEYS[2] limkeys: set of flow-control keys
-- KEYS[3] queues: set of known queues (all are woken: a raised limit may
--                 unblock jobs anywhere)
-- ARGV[1] key
-- ARGV[2] the limit, or "" to clear the override
--
-- Returns 1; 0, with nothing written, for a clear of a key not in limkeys.
-- Sub-queues parked on the key are put back.

-- every argument is checked before the first write (_check.lua)
check_count(2)
check_str(ARGV[1], 'limit key')
check_opt(ARGV[2], 'concurrency limit', 0, MAX_LIMIT, true)

if ARGV[2] == '' and redis.call('SISMEMBER', S.limkeys, ARGV[1]) == 0 then
  return 0
end
local key = K.limit(ARGV[1])
if ARGV[2] == '' then
  redis.call('HDEL', key, 'override')
else
  redis.call('HSET', key, 'override', ARGV[2])
end
if redis.call('HEXISTS', key, 'running') == 0 then
  redis.call('HSET', key, 'running', 0, 'failures', 0)
end
redis.call('SADD', S.limkeys, ARGV[1])
L.wake(ARGV[1], WAKE_ALL)
L.signal_all(S.queues)
return 1
