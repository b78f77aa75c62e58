-- _jobs.lua: uniqueness, enqueueing, removing and requeueing jobs.

-- uniqueness -------------------------------------------------------------

-- The job holding a unique key, or nil: held while that job is pending or
-- running, or while the key's TTL (set when the job succeeded) runs.
function L.unique_holder(ukey)
  local key = K.unique(ukey)
  local holder = redis.call('GET', key)
  if not holder then return nil end
  if redis.call('PTTL', key) > 0 then return holder end
  local state = redis.call('HGET', K.job(holder), 'state')
  if state == 'scheduled' or state == 'queued' or state == 'running' then return holder end
  return nil
end

-- After a job ends: keep its unique key for unique_for seconds after the
-- finish on success, release it otherwise.
function L.settle_unique(id, job, succeeded, now)
  if not job.ukey then return end
  local key = K.unique(job.ukey)
  if redis.call('GET', key) ~= id then return end
  local ufor = tonumber(redis.call('HGET', K.job(id), 'ufor') or '0') or 0
  if succeeded and ufor > 0 then
    redis.call('PEXPIREAT', key, math.ceil((now + ufor) * 1000))
  else
    redis.call('DEL', key)
  end
end


-- enqueue ----------------------------------------------------------------

-- Fields per job in ARGV, in this order ("" stands for None):
L.NEW_FIELDS = 19
-- the optional ones: job hash field and offset from the job's first field
local OPTIONAL = {{'timeout', 10}, {'limits', 11}, {'ukey', 13}, {'ufor', 14},
                  {'schedule', 15}, {'fire_time', 16}, {'host', 17}, {'retry', 18}}
-- 1 id, 2 task, 3 queue, 4 payload, 5 priority, 6 delay, 7 run_at, 8 max_attempts,
-- 9 max_lost, 10 lease, 11 timeout, 12 limits (JSON), 13 fair key, 14 unique key,
-- 15 unique_for, 16 schedule, 17 fire_time, 18 host, 19 retry policy (JSON)

-- The hash fields {name, value, ...} of a new job read from args at index b
-- (L.NEW_FIELDS of them), with its limit signature sig (L.sig), in state
-- with vtime, run_at and seq, sent at the store time stamp. Fields at their
-- defaults are left out (L.JOB_DEFAULTS), and enqueued_at while it equals run_at.
function L.new_job_fields(args, b, sig, state, vtime, run_at, seq, stamp)
  local fields = {
    'task', args[b + 1], 'queue', args[b + 2], 'state', state, 'payload', args[b + 3],
    'vtime', vtime, 'run_at', run_at, 'max_lost', args[b + 8], 'lease', args[b + 9], 'seq', seq,
  }
  local defaults = L.JOB_DEFAULTS
  local function unless_default(name, v)
    if v ~= defaults[name] then
      fields[#fields + 1] = name
      fields[#fields + 1] = v
    end
  end
  unless_default('priority', args[b + 4])
  unless_default('fair', args[b + 12])
  unless_default('sig', sig)
  unless_default('max_attempts', args[b + 7])
  if stamp ~= run_at then
    fields[#fields + 1] = 'enqueued_at'
    fields[#fields + 1] = stamp
  end
  for _, o in ipairs(OPTIONAL) do
    local v = args[b + o[2]]
    if v ~= '' then
      fields[#fields + 1] = o[1]
      fields[#fields + 1] = v
    end
  end
  return fields
end

-- Store count jobs read from args starting at index first. Checks everything
-- before writing, so a refused batch changes nothing. Returns the flat reply
-- {id, duplicate, id, duplicate, ...}, or nil and an error message.
-- keys: {seq=, queues=, vclock=}; the script also declares the keys of
-- _claim.lua, for the hand-off of ready jobs to idle workers, which is
-- skipped when watched is false (the caller saw no registration).
function L.enqueue(args, first, count, now, keys, watched)
  local n = L.NEW_FIELDS
  local plan, holds, ids, fresh = {}, {}, {}, {}
  for i = 0, count - 1 do
    local base = first + i * n
    local id, ukey = args[base], L.opt(args[base + 13])
    local holder = nil
    if ukey then
      holder = holds[ukey] or L.unique_holder(ukey)
    end
    if holder then
      plan[#plan + 1] = {id = holder, dup = true}
    else
      if ids[id] then return nil, 'a job with one of these ids already exists' end
      ids[id] = true
      fresh[#fresh + 1] = K.job(id)
      if ukey then holds[ukey] = id end
      plan[#plan + 1] = {id = id, base = base}
    end
  end
  for i = 1, #fresh, 1000 do
    if redis.call('EXISTS', unpack(fresh, i, math.min(i + 999, #fresh))) > 0 then
      return nil, 'a job with one of these ids already exists'
    end
  end
  local seq = 0
  if #fresh > 0 then seq = redis.call('INCRBY', keys.seq, #fresh) - #fresh end
  local stamp = L.fmt(now)
  local idx = L.batch()
  local reply, clocks, lasts, ready, delayed, heads, run_ats = {}, {}, {}, {}, {}, {}, {}
  local targeted = {} -- queues given jobs sent to a host
  for _, p in ipairs(plan) do
    if not p.dup then
      local b = p.base
      local id, task, queue, priority = args[b], args[b + 1], args[b + 2], args[b + 4]
      local fair, ukey, schedule = args[b + 12], L.opt(args[b + 13]), L.opt(args[b + 15])
      local limits, host = L.opt(args[b + 11]), L.opt(args[b + 17])
      local sig = L.sig(limits, host)
      if host then targeted[queue] = true end
      if clocks[queue] == nil then
        redis.call('SADD', keys.queues, queue)
        clocks[queue] = tonumber(redis.call('HGET', keys.vclock, queue) or '0')
        lasts[queue] = {}
      end
      local last = lasts[queue][fair]
      if last == nil then
        last = tonumber(redis.call('HGET', K.fair(queue), fair) or '0')
      end
      local vtime = math.max(last, clocks[queue]) + 1
      lasts[queue][fair] = vtime
      local run_at = L.opt(args[b + 6])
      if not run_at then
        local delay = args[b + 5]
        run_at = run_ats[delay]
        if not run_at then
          run_at = L.fmt(now + tonumber(delay))
          run_ats[delay] = run_at
        end
      end
      local state = 'queued'
      if tonumber(run_at) > now then state = 'scheduled' end
      seq = seq + 1
      local fields = L.new_job_fields(args, b, sig, state, vtime, run_at, seq, stamp)
      redis.call('HSET', K.job(id), unpack(fields))
      if ukey then redis.call('SET', K.unique(ukey), id) end
      idx.move(id, queue, seq, nil, state)
      -- a queued job enters its task index when it leaves the queued state
      -- (claim, cancel), so a backlog costs no entry there
      if state ~= 'queued' then idx.add(K.task(task), seq, id) end
      if schedule then idx.add(K.sched(schedule), seq, id) end
      if state == 'queued' then
        idx.add(K.ready(queue, priority, sig), vtime, L.member(seq, id))
        heads[queue .. '\0' .. priority .. '\0' .. sig] = {queue = queue, priority = priority,
                                                             sig = sig}
        ready[queue] = (ready[queue] or 0) + 1
      else
        idx.add(K.delayed(queue), run_at, id)
        delayed[queue] = true
      end
    end
    reply[#reply + 1] = p.id
    reply[#reply + 1] = p.dup and '1' or '0'
  end
  idx.flush()
  for _, h in pairs(heads) do L.sub_head(h.queue, h.priority, h.sig) end
  for queue, fairs in pairs(lasts) do
    for fair, vtime in pairs(fairs) do redis.call('HSET', K.fair(queue), fair, vtime) end
  end
  -- idle workers get ready jobs at once; the rest wake waiters, which also
  -- re-read the next run time when a delayed job came; a job sent to a host
  -- wakes every waiter (only some may take it)
  local wake = {}
  for queue in pairs(delayed) do wake[queue] = 1 end
  for queue, n in pairs(ready) do
    local handed = watched == false and 0 or L.hand_off(queue, n, now)
    wake[queue] = math.max(wake[queue] or 0, n - handed)
    if targeted[queue] and handed < n then wake[queue] = SIGNAL_CAP end
  end
  for queue, n in pairs(wake) do L.signal(queue, n, now) end
  return reply
end

-- removal ----------------------------------------------------------------

local REMOVE_FIELDS = {'state', 'queue', 'task', 'priority', 'seq', 'schedule', 'ukey', 'sig'}

-- Delete a job and its index entries. unique: 'active' drops the unique key
-- if this job holds it without a deadline, 'any' if it holds it at all,
-- 'keep' leaves it. Returns the job's state before, or nil if it was absent.
function L.remove_job(id, unique, finished_key)
  local job = L.job_fields(K.job(id), REMOVE_FIELDS)
  if not job.state then return nil end
  L.unschedule(id, job)
  L.index_state(id, job.queue, job.seq, job.state, nil)
  redis.call('ZREM', K.task(job.task), id)
  if job.schedule then redis.call('ZREM', K.sched(job.schedule), id) end
  redis.call('ZREM', finished_key, id)
  if job.ukey and unique ~= 'keep' then
    local key = K.unique(job.ukey)
    if redis.call('GET', key) == id and (unique == 'any' or redis.call('PTTL', key) == -1) then
      redis.call('DEL', key)
    end
  end
  for a = 1, tonumber(redis.call('HGET', K.job(id), 'logmax') or 0) do redis.call('DEL', K.logs(id, a)) end
  redis.call('DEL', K.job(id))
  return job.state
end

-- The history entry (JSON) of a job steered by hand at now, outside any
-- attempt, by (nil for no one named): event 'requeued' (a failed or
-- cancelled job queued again: its attempts count afresh) or 'cancelled'
-- (before it ran).
function L.by_hand_entry(event, now, by)
  return string.format('{"event":"%s","by":%s,"at":%s}', event, L.json_str(by), L.fmt(now))
end

-- Queue a failed or cancelled job again with fresh attempt counts; it takes
-- its unique key back, and its history gains entry (L.by_hand_entry).
-- Returns the job's queue when applied; false for jobs in other states, and
-- for a job whose unique key another job holds meanwhile (one job per key at
-- a time), left as they were.
function L.requeue(id, now, finished_key, entry)
  local jkey = K.job(id)
  local job = L.job_fields(jkey, {'state', 'queue', 'priority', 'vtime', 'seq', 'ukey', 'sig',
                                  'history'})
  if job.state ~= 'failed' and job.state ~= 'cancelled' then return false end
  if job.ukey then
    local holder = L.unique_holder(job.ukey)
    if holder and holder ~= id then return false end
  end
  L.pin_enqueued_at(jkey)
  L.put(jkey, {'state', 'queued', 'run_at', L.fmt(now), 'attempt', '0', 'lost', '0',
               'finished_at', false, 'started_at', false, 'error', false, 'traceback', false,
               'cancel_at', false, 'cancel_by', false,
               'history', L.append_json(job.history, entry)})
  L.index_state(id, job.queue, job.seq, job.state, 'queued')
  L.ready_add(id, job.queue, job.priority, job.vtime, job.seq, job.sig)
  redis.call('ZREM', finished_key, id)
  if job.ukey then redis.call('SET', K.unique(job.ukey), id) end
  return job.queue
end

-- attempts ---------------------------------------------------------------

-- The host of worker owner (nil for none), from its heartbeat record in
-- S.workers: false once the record is gone. hosts caches the hosts looked up
-- in one call.
function L.owner_host(owner, hosts)
  if not owner then return false end
  local host = hosts[owner]
  if host == nil then
    host = false
    local record = redis.call('HGET', S.workers, owner)
    if record then
      local ok, info = pcall(cjson.decode, record)
      if ok and type(info) == 'table' and type(info.host) == 'string' then host = info.host end
    end
    hosts[owner] = host
  end
  return host
end

-- The history entry (JSON) of the attempt of job (fields attempt and owner)
-- that ends with event: the worker that held its lease and that worker's
-- host, from its heartbeat record in S.workers (null once the record is
-- gone); err for a failure. hosts caches the hosts looked up in one call.
function L.attempt_entry(job, event, stamp, hosts, err)
  local owner = L.opt(job.owner)
  local host = L.owner_host(owner, hosts)
  local extra = ''
  if event == 'failed' then extra = ',"error":' .. L.json_str(err or nil) end
  if event == 'cancelled' then
    extra = ',"by":' .. L.json_str(L.opt(job.cancel_by)) .. ',"requested_at":' .. job.cancel_at
  end
  return string.format('{"attempt":%d,"event":"%s","worker":%s,"host":%s%s,"at":%s}',
                       tonumber(job.attempt), event, L.json_str(owner), L.json_str(host or nil),
                       extra, stamp)
end

-- The running job id, asked to stop (cancel.lua), ends cancelled whatever
-- its attempt reported: its history names who asked and when; its lease,
-- limit slots and unique key are freed. job holds the fields queue, seq,
-- limits, ukey, attempt, owner, history, cancel_at and cancel_by. Returns
-- true when it freed limit slots (book then needs saving).
function L.end_cancelled(id, job, now, hosts, book)
  local stamp = L.fmt(now)
  local entry = L.attempt_entry(job, 'cancelled', stamp, hosts)
  if job.limits then book.release(cjson.decode(job.limits), id, nil) end
  redis.call('ZREM', S.leases, id)
  L.put(K.job(id), {'state', 'cancelled', 'finished_at', stamp, 'owner', '', 'token', '',
                    'expires', '', 'history', L.append_json(job.history, entry)})
  L.index_state(id, job.queue, job.seq, 'running', 'cancelled')
  redis.call('ZADD', S.finished, now, id)
  L.settle_unique(id, job, false, now)
  return job.limits ~= nil
end

-- queue modes ------------------------------------------------------------

-- A failed attempt of job id in queue: a queue in debug mode (S.debug) is
-- paused (S.paused) at its first one, with the job linked in S.debugjob.
function L.debug_pause(queue, id)
  if redis.call('SREM', S.debug, queue) == 1 then
    redis.call('SADD', S.paused, queue)
    redis.call('HSET', S.debugjob, queue, id)
  end
end

-- stats ------------------------------------------------------------------

-- The stats hash field of an outcome: "s" or "f", len(queue), ":", queue, task.
function L.stats_field(ok, queue, task)
  return (ok and 's' or 'f') .. #queue .. ':' .. queue .. task
end

-- finish.lua's outcome flags by their string: five "1"/"0" for ok, has a
-- result, has an error, has a traceback and snooze, as booleans. Every valid
-- string is a key: an outcome's flags are looked up, not parsed.
L.OUTCOME_FLAGS = {}
for n = 0, 31 do -- (operators only: `math` is not reachable while Redis loads this)
  local key, bits, rest = '', {}, n
  for k = 5, 1, -1 do
    bits[k] = rest % 2 == 1
    rest = (rest - rest % 2) / 2
  end
  for k = 1, 5 do key = key .. (bits[k] and '1' or '0') end
  L.OUTCOME_FLAGS[key] = {ok = bits[1], result = bits[2], err = bits[3], tb = bits[4],
                          snooze = bits[5]}
end

-- The stats hash field of a failed attempt after which the job runs again.
function L.retried_field(queue, task)
  return 'r' .. #queue .. ':' .. queue .. task
end

-- Add counts ({field = n}) to this minute's hash (kept two days) and the totals.
function L.count_stats(counts, now, totals_key)
  if not next(counts) then return end
  local minute_key = K.stats(math.floor(now / 60))
  for field, n in pairs(counts) do
    redis.call('HINCRBY', minute_key, field, n)
    redis.call('HINCRBY', totals_key, field, n)
  end
  redis.call('EXPIRE', minute_key, STATS_TTL)
end
