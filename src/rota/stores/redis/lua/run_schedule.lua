-- run_schedule: enqueue a job of a schedule outside its trigger and make it
-- the schedule's last job, in one step (Store.run_schedule).
--
-- KEYS[1] prefix: the namespace prefix; schedule, job, index, ready, delayed,
--                 fair, unique and signal keys are derived from it (_base.lua)
-- KEYS[2] seq: job sequence counter
-- KEYS[3] queues: set of known queues
-- KEYS[4] vclock: queue -> virtual clock
-- KEYS[5] paused: set of paused queues (hand-off to idle workers, _claim.lua)
-- KEYS[6] leases: running job id -> lease expiry (hand-off)
-- KEYS[7] limkeys: set of flow-control keys (hand-off)
-- ARGV[1] request id, for replay after a reconnect ("" for none)
-- ARGV[2] schedule name
-- ARGV[3..] the job, as L.NEW_FIELDS fields (see _jobs.lua, L.enqueue)
--
-- Returns {id, duplicate ("1"/"0")}, or {} when no schedule has that name
-- (nothing enqueued), or the error "ROTA_INVALID <message>" with nothing
-- changed. The schedule's next and last fire stay as they are.

-- every argument is checked before the first write (_check.lua)
check_str(ARGV[2], 'schedule name')
check_count(2 + 19) -- L.NEW_FIELDS
check_job(ARGV, 3)

local replay = L.replayed(ARGV[1])
if replay then return cjson.decode(replay) end

local key = K.schedule(ARGV[2])
if redis.call('EXISTS', key) == 0 then
  L.remember(ARGV[1], '[]')
  return {}
end
local reply, err = L.enqueue(ARGV, 3, 1, L.now(), S)
if not reply then return redis.error_reply('ROTA_INVALID ' .. err) end
redis.call('HSET', key, 'last_job_id', reply[1])
L.remember(ARGV[1], cjson.encode(reply))
return reply
