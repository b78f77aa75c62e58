-- fire_schedule: advance a schedule and enqueue its job in one step
-- (Store.fire_schedule).
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
-- ARGV[3] expected next_fire
-- ARGV[4] new next_fire ("" for None)
-- ARGV[5] "1" if a job follows, "0" to drop this fire
-- ARGV[6..] the job, as L.NEW_FIELDS fields (see _jobs.lua, L.enqueue)
--
-- Applies only if the schedule is enabled and its stored next_fire equals
-- ARGV[3] (else "conflict").
-- Returns "fired", "skipped", "dropped" or "conflict", or the error
-- "ROTA_INVALID <message>" with nothing changed.

-- every argument is checked before the first write (_check.lua)
local w = 'schedule ' .. string.format('%q', check_str(ARGV[2], 'schedule name')) .. ': '
check_num(ARGV[3], w .. 'expected next fire', MIN_TIME, MAX_TIME)
check_opt(ARGV[4], w .. 'new next fire', MIN_TIME, MAX_TIME)
check_flag(ARGV[5], w .. 'job flag')
if ARGV[5] == '1' then
  check_count(5 + 19) -- L.NEW_FIELDS
  check_job(ARGV, 6)
else
  check_count(5)
end

local replay = L.replayed(ARGV[1])
if replay then return replay end

local key = K.schedule(ARGV[2])
local s = L.fields(key, {'next_fire', 'overlap', 'last_job_id', 'enabled'})
if not s.next_fire or tonumber(s.next_fire) ~= tonumber(ARGV[3]) then return 'conflict' end
if s.enabled == '0' then return 'conflict' end

local outcome, job_id = 'fired', nil
if ARGV[5] ~= '1' then
  outcome = 'dropped'
elseif s.overlap ~= 'allow' and s.last_job_id then
  local state = redis.call('HGET', K.job(s.last_job_id), 'state')
  local waiting = state == 'scheduled' or state == 'queued'
  if waiting or (s.overlap == 'skip' and state == 'running') then outcome = 'skipped' end
end
if outcome == 'fired' then
  local reply, err = L.enqueue(ARGV, 6, 1, L.now(), S)
  if not reply then return redis.error_reply('ROTA_INVALID ' .. err) end
  job_id = reply[1]
end
L.put(key, {'next_fire', L.opt(ARGV[4]) or false, 'last_fire', ARGV[3]})
if outcome == 'skipped' then redis.call('HINCRBY', key, 'skipped', 1) end
if job_id then redis.call('HSET', key, 'last_job_id', job_id) end
L.remember(ARGV[1], outcome)
return outcome
