-- finish: record attempt outcomes (Store.finish).
--
-- KEYS[1] prefix: the namespace prefix; job, index, delayed, limit, unique,
--                 stats and signal keys are derived from it (_base.lua)
-- KEYS[2] leases: running job id -> lease expiry
-- KEYS[3] finished: finished job id -> finished_at
-- KEYS[4] limkeys: set of flow-control keys
-- KEYS[5] totals: all-time counts
-- KEYS[6] workers: worker id -> heartbeat record (the host of a lease owner)
-- KEYS[7] paused: set of paused queues
-- KEYS[8] debug: set of queues in debug mode
-- KEYS[9] debugjob: queue -> the failed job that paused it in debug mode
-- ARGV[1] request id, for replay after a reconnect ("" for none)
-- ARGV[2..] 8 fields per outcome: job id, token, flags, result, error,
--           traceback, retry_in ("" for None), and the error's kinds (its
--           exception classes, one per line; "" for none). flags is five
--           characters "1"/"0": ok, has result, has error, has traceback,
--           snooze.
--
-- An outcome whose token does not hold the running job is refused (0) and
-- changes nothing. Success: succeeded with the result. Failure with retry_in
-- and attempts left: scheduled at now + retry_in. Otherwise failed. Each
-- outcome appends the attempt to the job's history, with the worker that ran
-- it and its host. A success that would be the history's first entry is
-- kept as the fields ran_by (the worker) and ran_on (its host, left out when
-- not known) instead, with attempt and finished_at: most jobs end so, and
-- the entry as a string is longer than Redis's compact hash encoding takes
-- (64 bytes by default); the store's reads make the entry from them. Limit
-- slots are released and breakers count the outcome; stats are counted per
-- minute (kept two days) and all time. A snooze is no attempt: scheduled at
-- now + retry_in, its attempt taken back, no history entry, no stats nor
-- breaker count. A queue in debug mode is paused at its first failed
-- attempt, linking that job. A job asked to stop (cancel.lua) ends cancelled
-- whatever the outcome. Returns "1" or "0" per outcome (strings: the reply is
-- remembered for a replay as JSON, where each number took a "%.14g"
-- formatting).

-- every argument is checked before the first write (_check.lua)
check_groups(2, 8, 'outcomes')
-- (the prefix naming the outcome is built only for a refusal)
local function of(i) return 'outcome of job ' .. string.format('%q', ARGV[i]) .. ': ' end
for i = 2, #ARGV, 8 do
  check_str(ARGV[i], 'job id')
  local token, flags, retry_in = ARGV[i + 1], ARGV[i + 2], ARGV[i + 6]
  if token == '' then check_str(token, of(i) .. 'token') end
  local f = L.OUTCOME_FLAGS[flags]
  if not f then refuse(of(i) .. 'flags must be five "0"/"1"', flags) end
  if retry_in ~= '' then check_num(retry_in, of(i) .. 'retry_in', 0, MAX_SECONDS) end
  if f.snooze and (retry_in == '' or f.ok) then
    refuse(of(i) .. 'a snooze is a failure with retry_in', flags)
  end
end

local replay = L.replayed(ARGV[1])
if replay then return cjson.decode(replay) end

-- The fields of job jkey every outcome needs, as a table (nil for a missing
-- field). Made by a table constructor, which sizes it once (filled field by
-- field, L.fields, a table grows again and again). A field missing from a
-- job's hash costs a scan of the whole hash, so those only some outcomes need
-- are read by read_more, on their paths.
local function read_job(jkey)
  local v = redis.call('HMGET', jkey, 'state', 'token', 'queue', 'task', 'seq', 'limits', 'ukey',
                       'owner', 'history', 'cancel_at')
  return {state = v[1] or nil, token = v[2] or nil, queue = v[3] or nil, task = v[4] or nil,
          seq = v[5] or nil, limits = v[6] or nil, ukey = v[7] or nil, owner = v[8] or nil,
          history = v[9] or nil, cancel_at = v[10] or nil}
end
-- Add the fields of job jkey in names to job (those left out at their defaults
-- with these values, L.job_fields).
local function read_more(jkey, job, names)
  for name, v in pairs(L.job_fields(jkey, names)) do job[name] = v end
end
local FOR_CANCEL = {'attempt', 'cancel_by'} -- an attempt ended by its cancel
local FOR_ENTRY = {'attempt'} -- a success's history entry
local FOR_FAILURE = {'attempt', 'lost', 'max_attempts'}
local now = L.now()
local stamp = L.fmt(now)
local book = L.book(now)
local idx = L.batch()
local reply, counts, wake, settle, hosts = {}, {}, {}, {}, {}
local used_book = false

-- queue -> task -> its stats fields {success, failure}: made once per call
-- rather than joined anew for every outcome
local stats_fields = {}
local function count(queue, task, ok)
  local of_queue = stats_fields[queue]
  if not of_queue then
    of_queue = {}
    stats_fields[queue] = of_queue
  end
  local pair = of_queue[task]
  if not pair then
    pair = {L.stats_field(true, queue, task), L.stats_field(false, queue, task)}
    of_queue[task] = pair
  end
  local field = ok and pair[1] or pair[2]
  counts[field] = (counts[field] or 0) + 1
end

-- the fields that end a lease
local LEASE_ENDS = {'owner', '', 'token', '', 'expires', ''}

-- Back to scheduled, due at now + retry_in, with the fields of more
-- ({name, value, ...}; false deletes one): a retry or a snooze.
local function schedule_again(id, jkey, job, retry_in, more)
  local run_at = now + tonumber(retry_in)
  L.pin_enqueued_at(jkey)
  local fields = {'state', 'scheduled', 'run_at', L.fmt(run_at), unpack(LEASE_ENDS)}
  for _, v in ipairs(more) do fields[#fields + 1] = v end
  L.put(jkey, fields)
  idx.move(id, job.queue, job.seq, 'running', 'scheduled')
  idx.add(K.delayed(job.queue), run_at, id)
  wake[job.queue] = true
end

for i = 2, #ARGV, 8 do
  local id, token, flags = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local jkey = K.job(id)
  local job = read_job(jkey)
  if job.state ~= 'running' or job.token ~= token then
    reply[#reply + 1] = '0'
  elseif job.cancel_at then -- asked to stop: it ends so, whatever the attempt reported
    reply[#reply + 1] = '1'
    read_more(jkey, job, FOR_CANCEL)
    if L.end_cancelled(id, job, now, hosts, book) then
      used_book = true
      wake[job.queue] = true
    end
  else
    reply[#reply + 1] = '1'
    local f = L.OUTCOME_FLAGS[flags]
    local ok = f.ok
    -- false stands for None (L.put deletes the field)
    local result = f.result and ARGV[i + 3]
    local err = f.err and ARGV[i + 4]
    local tb = f.tb and ARGV[i + 5]
    local retry_in = L.opt(ARGV[i + 6])
    local snooze = f.snooze
    idx.rem(S.leases, id)
    if not snooze then count(job.queue, job.task, ok) end
    if job.limits then
      local counted = ok
      if snooze then counted = nil end -- a snooze counts in no breaker, as a release
      book.release(cjson.decode(job.limits), id, counted, ARGV[i + 7])
      used_book = true
      wake[job.queue] = true
    end
    if snooze then
      redis.call('HINCRBY', jkey, 'attempt', -1)
      schedule_again(id, jkey, job, retry_in, {'error', err, 'traceback', false})
    elseif ok then
      local owner = L.opt(job.owner)
      if not L.json_empty(job.history) or not owner then
        read_more(jkey, job, FOR_ENTRY)
        local entry = L.attempt_entry(job, 'succeeded', stamp, hosts)
        L.put(jkey, {'state', 'succeeded', 'result', result, 'finished_at', stamp,
                     'owner', '', 'token', '', 'expires', '',
                     'history', L.append_json(job.history, entry)})
      else -- its one attempt, in two short fields (see the header)
        L.put(jkey, {'state', 'succeeded', 'result', result, 'finished_at', stamp,
                     'owner', '', 'token', '', 'expires', '',
                     'ran_by', owner, 'ran_on', L.owner_host(owner, hosts)})
      end
      idx.move(id, job.queue, job.seq, 'running', 'succeeded')
      idx.add(S.finished, stamp, id)
      if job.ukey then settle[#settle + 1] = {id, job, true} end
    else
      read_more(jkey, job, FOR_FAILURE)
      local entry = L.attempt_entry(job, 'failed', stamp, hosts, err)
      L.debug_pause(job.queue, id)
      local tries = tonumber(job.attempt) - tonumber(job.lost)
      if retry_in and tries < tonumber(job.max_attempts) then
        schedule_again(id, jkey, job, retry_in, {'error', err, 'traceback', tb,
                                                 'history', L.append_json(job.history, entry)})
        local retried = L.retried_field(job.queue, job.task)
        counts[retried] = (counts[retried] or 0) + 1
      else
        L.put(jkey, {'state', 'failed', 'error', err, 'traceback', tb, 'finished_at', stamp,
                     'history', L.append_json(job.history, entry), unpack(LEASE_ENDS)})
        idx.move(id, job.queue, job.seq, 'running', 'failed')
        idx.add(S.finished, stamp, id)
        if job.ukey then settle[#settle + 1] = {id, job, false} end
      end
    end
  end
end

idx.flush()
for _, s in ipairs(settle) do L.settle_unique(s[1], s[2], s[3], now) end
if used_book then book.save(S.limkeys) end
L.count_stats(counts, now, S.totals)
for queue in pairs(wake) do L.signal(queue, 1) end
L.remember(ARGV[1], cjson.encode(reply))
return reply
