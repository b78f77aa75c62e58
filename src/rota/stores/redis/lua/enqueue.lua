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
-- running and pushed to that worker's inbox as L.claim would have claimed
-- it: the row, the lease, the registration's slots and count. It takes the
-- queue's clock as its virtual time and leaves the clocks alone, since it
-- never waited behind other jobs. This is the latency path (a send to a
-- waiting worker), so it is written out here without the library: Redis
-- runs a script's whole chunk on every call, and defining the library's
-- functions costs more than this path's work (sharing L.deliver, L.next_due,
-- L.remember and the K functions instead measured 45 us more, cold). The
-- comments name the library function each piece mirrors; a Redis-specific
-- test checks that both ways leave the same job and inbox row. Every other
-- send goes the long way, L.enqueue, which hands ready jobs to idle workers
-- too.

-- every argument is checked before the first write (_check.lua)
local NEW_FIELDS = 19 -- L.NEW_FIELDS, the fields of one job
local count = check_num(ARGV[2], 'job count', 1, MAX_BATCH, true)
if #ARGV ~= 2 + count * NEW_FIELDS then
  refuse('enqueue takes ' .. NEW_FIELDS .. ' arguments per job', #ARGV - 2)
end
for i = 0, count - 1 do check_job(ARGV, 3 + i * NEW_FIELDS) end

local P, rid = KEYS[1], ARGV[1]

local function fmt(x) -- L.fmt
  if x == math.floor(x) and math.abs(x) < 1e15 then return string.format('%d', x) end
  return string.format('%.17g', x)
end

local function remember(reply) -- L.remember
  if rid ~= '' then
    local ttl = tonumber(string.match(rid, '^(%d+)/')) or 60
    redis.call('SET', P .. 'req:' .. rid, cjson.encode(reply), 'EX', ttl)
  end
end

-- The worker that may take the job now and its registration, or nil; and
-- whether the queue has registrations at all.
local function direct_taker(queue, now)
  local first = redis.call('ZRANGE', P .. 'idle:' .. queue, 0, 0, 'WITHSCORES')
  if #first == 0 then return nil, false end
  if tonumber(first[2]) <= now then return nil, true end
  local record = redis.call('GET', P .. 'idler:' .. first[1])
  if not record or redis.call('SISMEMBER', S.paused, queue) == 1 then return nil, true end
  local idle = cjson.decode(record)
  for _, q in ipairs(idle.queues) do
    if redis.call('EXISTS', P .. 'prios:' .. q) == 1 then return nil, true end
    for _, key in ipairs({P .. 'delayed:' .. q, P .. 'parked:' .. q}) do -- L.next_due
      local head = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
      if #head > 0 and tonumber(head[2]) <= now then return nil, true end
    end
  end
  return first[1], idle
end

-- Write the job (fields from ARGV, as L.enqueue reads them) as running for
-- worker and push its claimed row (L.CLAIMED order) to the worker's inbox.
local function hand(worker, idle, now)
  local id, task, queue, payload = ARGV[3], ARGV[4], ARGV[5], ARGV[6]
  local max_attempts, lease, timeout, retry = ARGV[10], ARGV[12], ARGV[13], ARGV[21]
  local seq = redis.call('INCRBY', S.seq, 1)
  local vtime = tonumber(redis.call('HGET', S.vclock, queue) or '0') + 1
  local stamp = fmt(now)
  idle.n = idle.n + 1
  idle.slots = idle.slots - 1
  local token = idle.token .. '.' .. idle.n .. ':' .. seq
  local expires = now + tonumber(lease)
  -- fields at their defaults are left out (L.JOB_DEFAULTS): lost, sig, and
  -- enqueued_at (the run_at)
  local fields = {
    'task', task, 'queue', queue, 'state', 'running', 'payload', payload,
    'vtime', vtime, 'run_at', stamp, 'attempt', 1, 'max_lost', ARGV[11], 'lease', lease,
    'seq', seq, 'owner', worker, 'token', token, 'expires', expires, 'started_at', stamp,
  }
  for _, field in ipairs({{'priority', ARGV[7], '0'}, {'fair', ARGV[15], ''},
                          {'max_attempts', max_attempts, '1'}, {'timeout', timeout, ''},
                          {'retry', retry, ''}}) do
    if field[2] ~= field[3] then
      fields[#fields + 1] = field[1]
      fields[#fields + 1] = field[2]
    end
  end
  redis.call('SADD', S.queues, queue)
  redis.call('HSET', P .. 'job:' .. id, unpack(fields))
  redis.call('ZADD', P .. 'state:running', seq, id)
  redis.call('ZADD', P .. 'qstate:' .. queue .. ':running', seq, id)
  redis.call('ZADD', P .. 'task:' .. task, seq, id)
  redis.call('ZADD', S.leases, expires, id)
  local inbox = P .. 'inbox:' .. worker
  local row = {idle.slots, id, task, queue, payload, '1', max_attempts, '0', token, lease,
               timeout ~= '' and timeout or false, stamp, stamp, false, false, stamp,
               retry ~= '' and retry or false}
  if redis.call('RPUSH', inbox, cjson.encode(row)) == 1 then -- a new list (L.deliver)
    redis.call('EXPIRE', inbox, 3600) -- INBOX_TTL
  end
  if idle.slots > 0 then
    redis.call('SET', P .. 'idler:' .. worker, cjson.encode(idle), 'KEEPTTL')
  else -- L.unidle
    redis.call('DEL', P .. 'idler:' .. worker)
    for _, q in ipairs(idle.queues) do redis.call('ZREM', P .. 'idle:' .. q, worker) end
  end
end

if rid ~= '' then
  local replay = redis.call('GET', P .. 'req:' .. rid)
  if replay then return cjson.decode(replay) end
end
local clock = redis.call('TIME')
local now = tonumber(clock[1]) + tonumber(clock[2]) / 1000000

local watched = true
if ARGV[2] == '1' and ARGV[9] == '' and tonumber(ARGV[8]) == 0 and ARGV[14] == ''
    and ARGV[16] == '' and ARGV[18] == '' and ARGV[20] == '' then
  local worker, idle = direct_taker(ARGV[5], now)
  if worker and redis.call('EXISTS', P .. 'job:' .. ARGV[3]) == 0 then -- else L.enqueue refuses
    hand(worker, idle, now)
    local reply = {ARGV[3], '0'}
    remember(reply)
    return reply
  end
  watched = idle ~= false
end

local L = library()
local reply, err = L.enqueue(ARGV, 3, tonumber(ARGV[2]), now, S, watched)
if not reply then return redis.error_reply('ROTA_INVALID ' .. err) end
remember(reply)
return reply
