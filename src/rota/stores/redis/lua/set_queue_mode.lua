-- set_queue_mode: put a queue in mode running, paused or debug
-- (Store.set_queue_mode, Store.pause_queue, Store.resume_queue).
--
-- KEYS[1] prefix: the namespace prefix; signal keys are derived from it
-- KEYS[2] queues: set of known queues
-- KEYS[3] paused: set of paused queues
-- KEYS[4] debug: set of queues in debug mode
-- KEYS[5] debugjob: queue -> the failed job that paused it in debug mode
-- ARGV[1] queue
-- ARGV[2] mode: "running", "paused" or "debug"
--
-- A queue is in at most one of the paused and debug sets. Pausing keeps the
-- job that paused a debug queue; running and debug clear it.

-- every argument is checked before the first write (_check.lua)
check_count(2)
local queue = check_str(ARGV[1], 'queue')
local mode = ARGV[2]
if mode ~= 'running' and mode ~= 'paused' and mode ~= 'debug' then
  refuse('queue mode must be one of running, paused, debug', mode)
end

redis.call('SADD', S.queues, queue)
if mode == 'paused' then
  redis.call('SADD', S.paused, queue)
  redis.call('SREM', S.debug, queue)
  return 1
end
redis.call('SREM', S.paused, queue)
redis.call('HDEL', S.debugjob, queue)
if mode == 'debug' then
  redis.call('SADD', S.debug, queue)
else
  redis.call('SREM', S.debug, queue)
end
L.signal(queue, 64)
return 1
