-- _ready.lua: the ready structure (sub-queues per limit signature), parking,
-- wake-up signals, and moving jobs in and out of it.

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

-- The signature of a job's limits JSON and host: the SHA1 of the limits, or
-- "-" for no limits; for a job sent to a host, "h" and the SHA1 of both
-- (claims look at the host of such a sub-queue's head, L.host_takes).
function L.sig(limits, host)
  if host then return 'h' .. redis.sha1hex((limits or '') .. '\n' .. host) end
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
-- listed: the caller knows the sub-queue is listed, so not parked (a parked
-- one is never listed), and the parked set need not be read or cleaned.
function L.sub_head(queue, priority, sig, listed)
  local head = redis.call('ZRANGE', K.ready(queue, priority, sig), 0, 0, 'WITHSCORES')
  if #head == 0 then
    unlist_sig(queue, priority, sig)
    if not listed then redis.call('ZREM', K.parked(queue), priority .. ':' .. sig) end
  elseif listed or not parked(queue, priority, sig) then
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
  local entry = cjson.encode({queue, member})
  if why.breaker or not why.at then
    redis.call('ZADD', K.waiting(why.key), now, entry)
  else -- waiting for the key's tokens: a new rate (set_rate) brings it back
    redis.call('ZADD', K.paced(why.key), now, entry)
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
local function unpark_popped(list, most)
  local popped = redis.call('ZPOPMIN', list, most)
  for i = 1, #popped, 2 do
    local entry = cjson.decode(popped[i])
    if L.unpark(entry[1], entry[2]) then L.signal(entry[1], 1) end
  end
end

function L.wake(key, most) unpark_popped(K.waiting(key), most) end

-- A key's rate changed: every sub-queue parked for its tokens comes back
-- (its head's admission is decided again at the new rate).
function L.wake_paced(key) unpark_popped(K.paced(key), WAKE_ALL) end

function L.ready_remove(id, queue, priority, seq, sig)
  redis.call('ZREM', K.ready(queue, priority, sig), L.member(seq, id))
  L.sub_head(queue, priority, sig)
end

-- Wake up to n waiters of a queue; the list is capped so idle queues stay
-- small. Each token is the store time it was pushed at (now, when the caller
-- has read the clock in this script): a waiter that claimed from the queue
-- later than that drops it (store.py, wait).
function L.signal(queue, n, now)
  if n <= 0 then return end
  if n > SIGNAL_CAP then n = SIGNAL_CAP end
  local stamp = L.fmt(now or L.now())
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
  local job = L.job_fields(K.job(id), {'queue', 'priority', 'vtime', 'seq', 'state', 'sig'})
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

