-- _lib.lua: helpers shared by every script; scripts.py prepends this file.
--
-- Before this file, scripts.py puts one generated line that binds the fixed
-- keys the script declares in its header:  local S = {seq = KEYS[2], ...}
-- KEYS[1] is always the namespace prefix "{rota:NAMESPACE}:". Keys that
-- depend on a job, queue or flow-control key are derived from it here, and
-- only here; the functions mirror keys.py name for name, so every key keeps
-- the namespace's hash tag (one Redis Cluster slot).
--
-- Numbers passed to redis.call keep full precision (Redis formats them with
-- 17 digits), but Lua's own number-to-string conversion (.., tostring, and
-- numbers in replies, which become integers) does not: those go through
-- L.fmt(). A job's owner, token and expires fields are "" while it holds no
-- lease (cheaper than deleting and re-creating them on every claim).

local PREFIX = KEYS[1]
local L = {}

-- keys -------------------------------------------------------------------

local K = {}
function K.job(id) return PREFIX .. 'job:' .. id end
function K.state(state) return PREFIX .. 'state:' .. state end
function K.qstate(queue, state) return PREFIX .. 'qstate:' .. queue .. ':' .. state end
function K.task(task) return PREFIX .. 'task:' .. task end
function K.sched(name) return PREFIX .. 'sched:' .. name end
function K.ready(queue, priority, sig)
  return PREFIX .. 'ready:' .. queue .. ':' .. priority .. ':' .. sig
end
function K.sigs(queue, priority) return PREFIX .. 'sigs:' .. queue .. ':' .. priority end
function K.heads(queue, priority) return PREFIX .. 'heads:' .. queue .. ':' .. priority end
function K.prios(queue) return PREFIX .. 'prios:' .. queue end
function K.parked(queue) return PREFIX .. 'parked:' .. queue end
function K.waiting(key) return PREFIX .. 'waiting:' .. key end
function K.delayed(queue) return PREFIX .. 'delayed:' .. queue end
function K.fair(queue) return PREFIX .. 'fair:' .. queue end
function K.limit(key) return PREFIX .. 'limit:' .. key end
function K.unique(key) return PREFIX .. 'unique:' .. key end
function K.signal(queue) return PREFIX .. 'signal:' .. queue end
function K.stats(minute) return PREFIX .. 'stats:' .. minute end
function K.schedule(name) return PREFIX .. 'schedule:' .. name end
function K.req(id) return PREFIX .. 'req:' .. id end

local STATS_TTL = 2 * 86400
local SIGNAL_CAP = 64
local REPLAY_TTL = 300
-- A sub-queue parked on a busy key is looked at again after this many seconds
-- even if no wake-up came (a slot may free while another key holds it back).
local PARK_HOLD = 2
-- Most sub-queues one operator action (set_limit, reset_breaker) unparks.
local WAKE_ALL = 10000

-- values -----------------------------------------------------------------

-- The store's clock: Redis TIME, in seconds since the epoch.
function L.now()
  local t = redis.call('TIME')
  return tonumber(t[1]) + tonumber(t[2]) / 1000000
end

-- A number as a string that reads back to the same double.
function L.fmt(x)
  if x == math.floor(x) and math.abs(x) < 1e15 then
    return string.format('%d', x)
  end
  return string.format('%.17g', x)
end

-- nil for false (missing hash fields) and for "" (None passed from Python).
function L.opt(v)
  if v == false or v == '' then return nil end
  return v
end

-- The ready-set member of a job: its sequence, zero-padded, then its id.
function L.member(seq, id)
  return string.format('%012x', tonumber(seq)) .. id
end

-- HGETALL reply as a table.
function L.hash(key)
  local flat = redis.call('HGETALL', key)
  if #flat == 0 then return nil end
  local t = {}
  for i = 1, #flat, 2 do t[flat[i]] = flat[i + 1] end
  return t
end

-- HMGET of the named fields as a table (missing fields are absent).
function L.fields(key, names)
  local values = redis.call('HMGET', key, unpack(names))
  local t = {}
  for i, name in ipairs(names) do
    if values[i] then t[name] = values[i] end
  end
  return t
end

-- Set fields; a value of false deletes the field. pairs_: {name, value, ...}
-- (never nil inside a table constructor: Lua's length operator stops at holes)
function L.put(key, pairs_)
  local set, del = {}, {}
  for i = 1, #pairs_, 2 do
    local v = pairs_[i + 1]
    if v == nil or v == false then
      del[#del + 1] = pairs_[i]
    else
      set[#set + 1] = pairs_[i]
      set[#set + 1] = v
    end
  end
  if #set > 0 then redis.call('HSET', key, unpack(set)) end
  if #del > 0 then redis.call('HDEL', key, unpack(del)) end
end

-- Append one JSON object to a JSON list held as a string.
function L.append_json(list, entry)
  if not list or list == '' or list == '[]' then return '[' .. entry .. ']' end
  return string.sub(list, 1, -2) .. ',' .. entry .. ']'
end

function L.json_str(v)
  if v == nil then return 'null' end
  return cjson.encode(v)
end

-- Batch replies remembered for replay after a reconnect (see store.py).
function L.replayed(rid)
  if not rid or rid == '' then return nil end
  return redis.call('GET', K.req(rid))
end

function L.remember(rid, value)
  if rid and rid ~= '' then
    redis.call('SET', K.req(rid), value, 'EX', REPLAY_TTL)
  end
end

-- indexes ----------------------------------------------------------------

-- Send a long argument list as few calls, whole entries of width each.
function L.chunked(cmd, key, list, width)
  local step = 1000 * width
  for i = 1, #list, step do
    redis.call(cmd, key, unpack(list, i, math.min(i + step - 1, #list)))
  end
end

-- Collects ZREM and ZADD arguments per key; flush() sends each key's as one
-- variadic call (removals first). Only for scripts that move each job once.
function L.batch()
  local b = {adds = {}, rems = {}, add_keys = {}, rem_keys = {}}
  function b.add(key, score, member)
    local t = b.adds[key]
    if not t then
      t = {}
      b.adds[key] = t
      b.add_keys[#b.add_keys + 1] = key
    end
    t[#t + 1] = score
    t[#t + 1] = member
  end
  function b.rem(key, member)
    local t = b.rems[key]
    if not t then
      t = {}
      b.rems[key] = t
      b.rem_keys[#b.rem_keys + 1] = key
    end
    t[#t + 1] = member
  end
  -- like L.index_state
  function b.move(id, queue, seq, old, new)
    if old then
      b.rem(K.state(old), id)
      b.rem(K.qstate(queue, old), id)
    end
    if new then
      b.add(K.state(new), seq, id)
      b.add(K.qstate(queue, new), seq, id)
    end
  end
  function b.flush()
    for _, key in ipairs(b.rem_keys) do L.chunked('ZREM', key, b.rems[key], 1) end
    for _, key in ipairs(b.add_keys) do L.chunked('ZADD', key, b.adds[key], 2) end
    b.adds, b.rems, b.add_keys, b.rem_keys = {}, {}, {}, {}
  end
  return b
end


-- Move a job between the state indexes (old may be nil for a new job).
function L.index_state(id, queue, seq, old, new)
  if old then
    redis.call('ZREM', K.state(old), id)
    redis.call('ZREM', K.qstate(queue, old), id)
  end
  if new then
    redis.call('ZADD', K.state(new), seq, id)
    redis.call('ZADD', K.qstate(queue, new), seq, id)
  end
end

-- The ready structure of a queue, per priority: one sub-queue per limit
-- signature (jobs with identical flow-control keys share one), each a zset
-- of members L.member(seq, id) scored by fair virtual time; and a zset of the
-- listed signatures, member L.member(head seq, sig) scored by the head's
-- virtual time, so it is in the exact (vtime, seq) order of the heads; the
-- hash heads: maps each listed signature to its current member. Claims merge
-- the sub-queues by head, so a signature whose head is blocked is skipped
-- whole.
--
-- A blocked sub-queue is parked: taken out of the signature set and put in
-- the queue's parked set ("PRIO:SIG" -> when to look again): until its rate
-- key has a token or its breaker cools down, or, when a busy key blocks it,
-- until a slot of that key frees (it then also waits in that key's waiting
-- set, JSON [queue, "PRIO:SIG"] -> parked at; see L.wake) and at most
-- PARK_HOLD seconds. Claims move parked sub-queues whose time has come back.

-- The signature of a job's limits JSON: its SHA1, or "-" for no limits.
function L.sig(limits)
  if not limits then return '-' end
  return redis.sha1hex(limits)
end

local function parked(queue, priority, sig)
  return redis.call('ZSCORE', K.parked(queue), priority .. ':' .. sig)
end

-- List a signature with its head (vtime, seq), replacing its old entry.
local function list_sig(queue, priority, sig, vtime, seq)
  local heads = K.heads(queue, priority)
  local member = L.member(seq, sig)
  local old = redis.call('HGET', heads, sig)
  if old == member then return end
  local sigs = K.sigs(queue, priority)
  if old then redis.call('ZREM', sigs, old) end
  redis.call('ZADD', sigs, vtime, member)
  redis.call('HSET', heads, sig, member)
  redis.call('ZADD', K.prios(queue), priority, priority)
end

-- Take a signature off the list (parked, or its sub-queue is empty).
local function unlist_sig(queue, priority, sig)
  local heads = K.heads(queue, priority)
  local old = redis.call('HGET', heads, sig)
  if not old then return end
  local sigs = K.sigs(queue, priority)
  redis.call('ZREM', sigs, old)
  redis.call('HDEL', heads, sig)
  if redis.call('ZCARD', sigs) == 0 then redis.call('ZREM', K.prios(queue), priority) end
end

-- Re-read a sub-queue's head into the signature set after it changed.
function L.sub_head(queue, priority, sig)
  local head = redis.call('ZRANGE', K.ready(queue, priority, sig), 0, 0, 'WITHSCORES')
  if #head == 0 then
    unlist_sig(queue, priority, sig)
    redis.call('ZREM', K.parked(queue), priority .. ':' .. sig)
  elseif not parked(queue, priority, sig) then
    list_sig(queue, priority, sig, head[2], tonumber(string.sub(head[1], 1, 12), 16))
  end
end

function L.ready_add(id, queue, priority, vtime, seq, sig)
  redis.call('ZADD', K.ready(queue, priority, sig), vtime, L.member(seq, id))
  L.sub_head(queue, priority, sig)
end

-- Park a sub-queue whose head is blocked; why = {key=, at=, breaker=} from
-- book.admit.
function L.park(queue, priority, sig, why, now)
  local member = priority .. ':' .. sig
  unlist_sig(queue, priority, sig)
  redis.call('ZADD', K.parked(queue), why.at or (now + PARK_HOLD), member)
  if why.breaker or not why.at then
    redis.call('ZADD', K.waiting(why.key), now, cjson.encode({queue, member}))
  end
end

-- Put a parked sub-queue ("PRIO:SIG") back among the ready ones. Returns
-- true if it was parked.
function L.unpark(queue, member)
  if redis.call('ZREM', K.parked(queue), member) == 0 then return false end
  local priority, sig = string.match(member, '^(.*):([^:]*)$')
  L.sub_head(queue, priority, sig)
  return true
end

-- Parked sub-queues of a queue whose time has come go back (bounded per call).
function L.unpark_due(queue, now, most)
  local due = redis.call('ZRANGEBYSCORE', K.parked(queue), '-inf', L.fmt(now), 'LIMIT', 0, most)
  for _, member in ipairs(due) do L.unpark(queue, member) end
end

-- A key freed slots: unpark up to most sub-queues waiting on it and wake
-- their queues' waiters.
function L.wake(key, most)
  local waiting = redis.call('ZPOPMIN', K.waiting(key), most)
  for i = 1, #waiting, 2 do
    local entry = cjson.decode(waiting[i])
    if L.unpark(entry[1], entry[2]) then L.signal(entry[1], 1) end
  end
end

function L.ready_remove(id, queue, priority, seq, sig)
  redis.call('ZREM', K.ready(queue, priority, sig), L.member(seq, id))
  L.sub_head(queue, priority, sig)
end

-- Wake up to n waiters of a queue; the list is capped so idle queues stay
-- small. Each token is the store time it was pushed at: a waiter that claimed
-- from the queue later than that drops it (store.py, wait).
function L.signal(queue, n)
  if n <= 0 then return end
  if n > SIGNAL_CAP then n = SIGNAL_CAP end
  local stamp = L.fmt(L.now())
  local tokens = {}
  for i = 1, n do tokens[i] = stamp end
  local key = K.signal(queue)
  redis.call('LPUSH', key, unpack(tokens))
  redis.call('LTRIM', key, 0, SIGNAL_CAP - 1)
end

function L.signal_all(queues_key)
  for _, queue in ipairs(redis.call('SMEMBERS', queues_key)) do L.signal(queue, SIGNAL_CAP) end
end

-- Make a pending job claimable now: scheduled -> queued (run_at unchanged).
function L.promote(id)
  local job = L.fields(K.job(id), {'queue', 'priority', 'vtime', 'seq', 'state', 'sig'})
  if job.state ~= 'scheduled' then return end
  redis.call('HSET', K.job(id), 'state', 'queued')
  L.index_state(id, job.queue, job.seq, 'scheduled', 'queued')
  L.ready_add(id, job.queue, job.priority, job.vtime, job.seq, job.sig)
end

-- Move due scheduled jobs of a queue into its ready set (bounded per call).
function L.promote_due(queue, now, most)
  local key = K.delayed(queue)
  local due = redis.call('ZRANGEBYSCORE', key, '-inf', L.fmt(now), 'LIMIT', 0, most)
  if #due == 0 then return 0 end
  for _, id in ipairs(due) do L.promote(id) end
  redis.call('ZREM', key, unpack(due))
  return #due
end

-- Remove a pending job from the ready or delayed set it sits in.
function L.unschedule(id, job)
  if job.state == 'queued' then
    L.ready_remove(id, job.queue, job.priority, job.seq, job.sig)
  elseif job.state == 'scheduled' then
    redis.call('ZREM', K.delayed(job.queue), id)
  end
end

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

-- flow control (mirrors rota.flow and stores/sqlite/_limits.py) ----------

local LIMIT_FIELDS = {'running', 'concurrency', 'override', 'rate', 'burst', 'tokens',
                      'tokens_at', 'failures', 'open_until', 'probe'}

function L.book(now)
  local book = {now = now, keys = {}, dirty = {}, blocked = {}, freed = {}}

  function book.get(key)
    local s = book.keys[key]
    if not s then
      local r = redis.call('HMGET', K.limit(key), unpack(LIMIT_FIELDS))
      s = {
        running = tonumber(r[1]) or 0, concurrency = tonumber(r[2]), override = tonumber(r[3]),
        rate = tonumber(r[4]), burst = tonumber(r[5]), tokens = tonumber(r[6]),
        tokens_at = tonumber(r[7]), failures = tonumber(r[8]) or 0,
        open_until = tonumber(r[9]), probe = L.opt(r[10]),
      }
      book.keys[key] = s
    end
    return s
  end

  local function refill(s, rate, burst)
    if s.tokens == nil or s.tokens_at == nil then return burst, now end
    local elapsed = math.max(0, now - s.tokens_at)
    return math.min(burst, s.tokens + elapsed * rate), now
  end

  local function breaker_allows(s)
    if s.open_until == nil then return true end
    return now >= s.open_until and s.probe == nil
  end

  -- Take the job's slots and tokens if every key allows it; else block the
  -- first key that does not, take nothing and return false and why:
  -- {key=, at= (when it may pass: rate, open breaker), breaker= true}.
  function book.admit(limits, job_id)
    local buckets = {}
    for _, c in ipairs(limits.c or {}) do
      local why = book.blocked[c[1]]
      if why then return false, why end
      local s = book.get(c[1])
      if s.running >= (s.override or c[2]) then
        why = {key = c[1]}
        book.blocked[c[1]] = why
        return false, why
      end
    end
    for _, r in ipairs(limits.r or {}) do
      local why = book.blocked[r[1]]
      if why then return false, why end
      local s = book.get(r[1])
      local tokens, at = refill(s, r[2], r[3])
      if tokens < 1 then
        why = {key = r[1], at = at + (1 - tokens) / r[2]}
        book.blocked[r[1]] = why
        return false, why
      end
      buckets[r[1]] = {tokens - 1, at}
    end
    for _, b in ipairs(limits.b or {}) do
      local why = book.blocked[b[1]]
      if why then return false, why end
      local s = book.get(b[1])
      if not breaker_allows(s) then
        if now < s.open_until then
          why = {key = b[1], at = s.open_until, breaker = true}
        else
          why = {key = b[1]} -- half-open, its probe is running
        end
        book.blocked[b[1]] = why
        return false, why
      end
    end
    for _, c in ipairs(limits.c or {}) do
      local s = book.get(c[1])
      s.running = s.running + 1
      s.concurrency = c[2]
      book.dirty[c[1]] = true
    end
    for _, r in ipairs(limits.r or {}) do
      local s = book.get(r[1])
      s.rate, s.burst = r[2], r[3]
      s.tokens, s.tokens_at = buckets[r[1]][1], buckets[r[1]][2]
      book.dirty[r[1]] = true
    end
    for _, b in ipairs(limits.b or {}) do
      local s = book.get(b[1])
      if s.open_until ~= nil then
        s.probe = job_id
        book.dirty[b[1]] = true
      end
    end
    return true
  end

  -- Free the job's slots; with ok not nil, count the outcome on its breakers.
  -- Keys that freed a slot (or ended a probe) are counted in book.freed.
  function book.release(limits, job_id, ok)
    for _, c in ipairs(limits.c or {}) do
      local s = book.get(c[1])
      s.running = math.max(0, s.running - 1)
      book.dirty[c[1]] = true
      book.freed[c[1]] = (book.freed[c[1]] or 0) + 1
    end
    for _, b in ipairs(limits.b or {}) do
      local s = book.get(b[1])
      if s.probe == job_id then
        s.probe = nil
        book.freed[b[1]] = (book.freed[b[1]] or 0) + 1
      end
      if ok == true then
        s.failures, s.open_until = 0, nil
      elseif ok == false then
        local half_open = s.open_until ~= nil
        s.failures = s.failures + 1
        if s.failures >= b[2] or half_open then
          s.open_until = now + b[3]
        else
          s.open_until = nil
        end
      end
      book.dirty[b[1]] = true
    end
  end

  local function num(v)
    if v == nil then return false end
    return L.fmt(v)
  end

  -- Write every changed key back.
  function book.save(limkeys)
    for key in pairs(book.dirty) do
      local s = book.keys[key]
      L.put(K.limit(key), {
        'running', L.fmt(s.running), 'concurrency', num(s.concurrency),
        'override', num(s.override), 'rate', num(s.rate), 'burst', num(s.burst),
        'tokens', num(s.tokens), 'tokens_at', num(s.tokens_at),
        'failures', L.fmt(s.failures), 'open_until', num(s.open_until), 'probe', s.probe or false,
      })
      redis.call('SADD', limkeys, key)
    end
    book.dirty = {}
    for key, n in pairs(book.freed) do L.wake(key, 2 * n + 1) end
    book.freed = {}
  end

  return book
end

-- enqueue ----------------------------------------------------------------

-- Fields per job in ARGV, in this order ("" stands for None):
L.NEW_FIELDS = 17
-- the optional ones: job hash field and offset from the job's first field
local OPTIONAL = {{'timeout', 10}, {'limits', 11}, {'ukey', 13}, {'ufor', 14},
                  {'schedule', 15}, {'fire_time', 16}}
-- 1 id, 2 task, 3 queue, 4 payload, 5 priority, 6 delay, 7 run_at, 8 max_attempts,
-- 9 max_lost, 10 lease, 11 timeout, 12 limits (JSON), 13 fair key, 14 unique key,
-- 15 unique_for, 16 schedule, 17 fire_time

-- Store count jobs read from args starting at index first. Checks everything
-- before writing, so a refused batch changes nothing. Returns the flat reply
-- {id, duplicate, id, duplicate, ...}, or nil and an error message.
-- keys: {seq=, queues=, vclock=}
function L.enqueue(args, first, count, now, keys)
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
  local reply, clocks, lasts, woken, heads, run_ats = {}, {}, {}, {}, {}, {}
  for _, p in ipairs(plan) do
    if not p.dup then
      local b = p.base
      local id, task, queue, priority = args[b], args[b + 1], args[b + 2], args[b + 4]
      local fair, ukey, schedule = args[b + 12], L.opt(args[b + 13]), L.opt(args[b + 15])
      local limits = L.opt(args[b + 11])
      local sig = L.sig(limits)
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
      local fields = {
        'id', id, 'task', task, 'queue', queue, 'state', state, 'payload', args[b + 3],
        'priority', priority, 'vtime', vtime, 'fair', fair, 'run_at', run_at,
        'enqueued_at', stamp, 'attempt', 0, 'max_attempts', args[b + 7], 'lost', 0,
        'max_lost', args[b + 8], 'lease', args[b + 9], 'sig', sig, 'seq', seq,
      }
      for _, o in ipairs(OPTIONAL) do
        local v = args[b + o[2]]
        if v ~= '' then
          fields[#fields + 1] = o[1]
          fields[#fields + 1] = v
        end
      end
      redis.call('HSET', K.job(id), unpack(fields))
      if ukey then redis.call('SET', K.unique(ukey), id) end
      idx.move(id, queue, seq, nil, state)
      idx.add(K.task(task), seq, id)
      if schedule then idx.add(K.sched(schedule), seq, id) end
      if state == 'queued' then
        idx.add(K.ready(queue, priority, sig), vtime, L.member(seq, id))
        heads[queue .. '\0' .. priority .. '\0' .. sig] = {queue = queue, priority = priority,
                                                             sig = sig}
        woken[queue] = (woken[queue] or 0) + 1
      else
        idx.add(K.delayed(queue), run_at, id)
        woken[queue] = math.max(woken[queue] or 0, 1) -- waiters re-read the next run time
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
  for queue, count_ in pairs(woken) do L.signal(queue, count_) end
  return reply
end

-- removal ----------------------------------------------------------------

local REMOVE_FIELDS = {'state', 'queue', 'task', 'priority', 'seq', 'schedule', 'ukey', 'sig'}

-- Delete a job and its index entries. unique: 'active' drops the unique key
-- if this job holds it without a deadline, 'any' if it holds it at all,
-- 'keep' leaves it. Returns the job's state before, or nil if it was absent.
function L.remove_job(id, unique, finished_key)
  local job = L.fields(K.job(id), REMOVE_FIELDS)
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
  redis.call('DEL', K.job(id))
  return job.state
end

-- Queue a failed or cancelled job again with fresh attempt counts; it takes
-- its unique key back. Refused (false) for jobs in other states, and while
-- another job holds the unique key (the retry would be its duplicate).
-- Returns the job's queue when applied.
function L.requeue(id, now, finished_key)
  local jkey = K.job(id)
  local job = L.fields(jkey, {'state', 'queue', 'priority', 'vtime', 'seq', 'ukey', 'sig'})
  if job.state ~= 'failed' and job.state ~= 'cancelled' then return false end
  if job.ukey then
    local holder = L.unique_holder(job.ukey)
    if holder and holder ~= id then return false end
  end
  L.put(jkey, {'state', 'queued', 'run_at', L.fmt(now), 'attempt', '0', 'lost', '0',
               'finished_at', false, 'started_at', false, 'error', false, 'traceback', false})
  L.index_state(id, job.queue, job.seq, job.state, 'queued')
  L.ready_add(id, job.queue, job.priority, job.vtime, job.seq, job.sig)
  redis.call('ZREM', finished_key, id)
  if job.ukey then redis.call('SET', K.unique(job.ukey), id) end
  return job.queue
end
