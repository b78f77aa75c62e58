-- set_paused: pause or resume a queue (Store.pause_queue, Store.resume_queue).
--
-- KEYS[1] prefix: the namespace prefix; signal keys are derived from it
-- KEYS[2] queues: set of known queues
-- KEYS[3] paused: set of paused queues
-- ARGV[1] queue
-- ARGV[2] "1" to pause, "0" to resume

-- every argument is checked before the first write (_check.lua)
check_count(2)
check_str(ARGV[1], 'queue')
check_flag(ARGV[2], 'paused')

redis.call('SADD', S.queues, ARGV[1])
if ARGV[2] == '1' then
  redis.call('SADD', S.paused, ARGV[1])
else
  redis.call('SREM', S.paused, ARGV[1])
  L.signal(ARGV[1], 64)
end
return 1
