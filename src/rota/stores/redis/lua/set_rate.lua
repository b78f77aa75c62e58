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
-- The key's bucket is first brought up to now at its old rate. Sub-queues
-- parked for the key's tokens are put back.

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
-- the bucket as it stands now at the rate it had: the time since its last
-- take is credited at that rate, not at the new one
local f = redis.call('HMGET', key, 'tokens', 'tokens_at', 'rate', 'burst', 'rate_override')
local old_rate, burst = tonumber(f[5]) or tonumber(f[3]), tonumber(f[4])
if tonumber(f[1]) ~= nil and tonumber(f[2]) ~= nil and old_rate ~= nil and burst ~= nil then
  local tokens, at = L.refill(tonumber(f[1]), tonumber(f[2]), old_rate, burst, L.now())
  redis.call('HSET', key, 'tokens', L.fmt(tokens), 'tokens_at', L.fmt(at))
end
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
