-- enqueue: store a batch of new jobs atomically (Store.enqueue).
--
-- KEYS[1] prefix: the namespace prefix; job, index, ready, delayed, fair,
--                 unique and signal keys are derived from it (_base.lua)
-- KEYS[2] seq: job sequence counter
-- KEYS[3] queues: set of known queues
-- KEYS[4] vclock: queue -> virtual clock
-- KEYS[5] paused: set of paused queues (hand-off to idle workers, _claim.lua)
-- KEYS[6] leases: running job id -> lease expiry (hand-off)
-- KEYS[7] limkeys: set of flow-control keys (hand-off)
-- ARGV[1] request id, for replay after a reconnect ("" for none)
-- ARGV[2] number of jobs N
-- ARGV[3..] N groups of L.NEW_FIELDS fields (see _jobs.lua, L.enqueue)
--
-- Returns {id, duplicate ("1"/"0"), ...} per job in order, or the error
-- "ROTA_INVALID <message>" with nothing changed.
--
-- The direct hand-off: a lone job due now, without limits, unique key,
-- schedule or host, sent to a queue whose oldest idle registration is live, not
-- paused, and would find nothing else to claim (no ready job, due delayed
-- job or due parked sub-queue on any of its worker's queues), is written as
-- running and delivered to that worker's inbox as L.claim would have claimed
-- it: the row, the lease, the registration's slots and count. It takes the
-- queue's clock as its virtual time and leaves the clocks alone, since it
-- never waited behind other jobs. This is the latency path (a send to a
-- waiting worker): the long way, a queued job that L.hand_off then claims,
-- measured 74 Redis commands per job sent one at a time against 43, and a
-- third more of the server's time. A Redis-specific test checks that both
-- ways leave the same job and inbox row. Every other send goes the long way,
-- L.enqueue, which hands ready jobs to idle workers too.

-- every argument is checked before the first write (_check.lua)
local NEW_FIELDS = L.NEW_FIELDS
local count = check_num(ARGV[2], 'job count', 1, MAX_BATCH, true)
if #ARGV ~= 2 + count * NEW_FIELDS then
  refuse('enqueue takes ' .. NEW_FIELDS .. ' arguments per job', #ARGV - 2)
end
for i = 0, count - 1 do check_job(ARGV, 3 + i * NEW_FIELDS) end

-- The worker that may take the job now and its registration, or nil; and
-- whether the queue has registrations at all.
local function direct_taker(queue, now)
  local first = redis.call('ZRANGE', K.idle(queue), 0, 0, 'WITHSCORES')
  if #first == 0 then return nil, false end
  if tonumber(first[2]) <= now then return nil, true end
  local record = redis.call('GET', K.idler(first[1]))
  if not record or redis.call('SISMEMBER', S.paused, queue) == 1 then return nil, true end
  local idle = cjson.decode(record)
  for _, q in ipairs(idle.queues) do
    if redis.call('EXISTS', K.prios(q)) == 1 then return nil, true end
  end
  local due = L.next_due(idle.queues)
  if due and due <= now then return nil, true end
  return first[1], idle
end

-- Write the job (fields from ARGV, as L.enqueue reads them) as running for
-- worker and deliver its claimed row (L.CLAIMED order).
local function hand(worker, idle, now)
  local id, task, queue, payload = ARGV[3], ARGV[4], ARGV[5], ARGV[6]
  local max_attempts, lease, timeout, retry = ARGV[10], ARGV[12], ARGV[13], ARGV[21]
  -- numbers made strings once here, each passed on more than once (Redis
  -- makes every number passed to it a string, by the costlier %.17g)
  local seq = string.format('%d', redis.call('INCRBY', S.seq, 1))
  local vtime = string.format('%d', tonumber(redis.call('HGET', S.vclock, queue) or '0') + 1)
  local stamp = L.fmt(now)
  idle.n = idle.n + 1
  local token = idle.token .. '.' .. string.format('%d', idle.n) .. ':' .. seq
  local expires = L.fmt(now + tonumber(lease))
  local fields = L.new_job_fields(ARGV, 3, L.sig(nil, nil), 'running', vtime, stamp, seq, stamp)
  local n = #fields
  fields[n + 1], fields[n + 2], fields[n + 3], fields[n + 4] = 'attempt', '1', 'owner', worker
  fields[n + 5], fields[n + 6], fields[n + 7], fields[n + 8] = 'token', token, 'expires', expires
  fields[n + 9], fields[n + 10] = 'started_at', stamp
  redis.call('SADD', S.queues, queue)
  redis.call('HSET', K.job(id), unpack(fields))
  L.index_state(id, queue, seq, nil, 'running')
  redis.call('ZADD', K.task(task), seq, id)
  redis.call('ZADD', S.leases, expires, id)
  L.deliver(worker, idle, {id, task, queue, payload, '1', max_attempts, '0', token, lease,
                           L.opt(timeout) or false, stamp, stamp, false, false, stamp,
                           L.opt(retry) or false})
end

local replay = L.replayed(ARGV[1])
if replay then return cjson.decode(replay) end
local now = L.now()

local watched = true
if count == 1 and ARGV[9] == '' and tonumber(ARGV[8]) == 0 and ARGV[14] == ''
    and ARGV[16] == '' and ARGV[18] == '' and ARGV[20] == '' then
  local worker, idle = direct_taker(ARGV[5], now)
  if worker and redis.call('EXISTS', K.job(ARGV[3])) == 0 then -- else L.enqueue refuses
    hand(worker, idle, now)
    local reply = {ARGV[3], '0'}
    L.remember(ARGV[1], cjson.encode(reply))
    return reply
  end
  watched = idle ~= false
end

local reply, err = L.enqueue(ARGV, 3, count, now, S, watched)
if not reply then return redis.error_reply('ROTA_INVALID ' .. err) end
L.remember(ARGV[1], cjson.encode(reply))
return reply
