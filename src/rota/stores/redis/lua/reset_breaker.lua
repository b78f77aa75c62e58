-- reset_breaker: close a key's circuit breaker by hand (Store.reset_breaker).
--
-- KEYS[1] prefix: the namespace prefix; limit, waiting, parked, ready and
--                 signal keys are derived from it
-- KEYS[2] queues: set of known queues (all are woken)
-- ARGV[1] key
--
-- Sub-queues parked on the breaker are put back. Returns 1 if the breaker
-- was open (or half-open), else 0.

-- every argument is checked before the first write (_check.lua)
check_count(1)
check_str(ARGV[1], 'limit key')

local key = K.limit(ARGV[1])
if redis.call('HEXISTS', key, 'open_until') == 0 then return 0 end
redis.call('HSET', key, 'failures', 0)
redis.call('HDEL', key, 'open_until', 'probe')
L.wake(ARGV[1], WAKE_ALL)
L.signal_all(S.queues)
return 1
