-- claim: lease up to N runnable jobs of some queues to one worker (Store.claim).
--
-- KEYS[1] prefix: the namespace prefix; job, ready, prios, delayed, limit and
--                 index keys are derived from it (_base.lua)
-- KEYS[2] paused: set of paused queues
-- KEYS[3] vclock: queue -> virtual clock (advanced to the claimed jobs' time)
-- KEYS[4] leases: running job id -> lease expiry
-- KEYS[5] limkeys: set of flow-control keys
-- ARGV[1] worker id
-- ARGV[2] limit N
-- ARGV[3] token base (each job's token is "<base>:<seq>")
-- ARGV[4] request id, for replay after a reconnect ("" for none)
-- ARGV[5..] queue names
--
-- Due scheduled jobs of the queues move to their ready sets first. Then the
-- ready sub-queues are merged: higher priority first, then fair virtual time,
-- then sequence. A sub-queue holds the jobs of one limit signature, so when
-- its head is blocked by a flow-control key the whole sub-queue is skipped;
-- the number of sub-queues and jobs looked at is bounded, so a queue full of
-- blocked jobs costs little. A blocked sub-queue is parked (see _ready.lua)
-- until it may pass, so later claims do not look at it again.
-- Returns the store's now, then 15 fields per claimed job: id, task, queue,
-- payload, attempt, max_attempts, lost, token, lease, timeout, enqueued_at,
-- run_at, schedule, fire_time, started_at (see _codec.CLAIM_FIELDS).

local RETURN = {'id', 'task', 'queue', 'payload', 'attempt', 'max_attempts', 'lost', 'token',
                'lease', 'timeout', 'enqueued_at', 'run_at', 'schedule', 'fire_time',
                'started_at'}
local PROMOTE_MAX = 1000

local worker, limit, token_base, rid = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4]

local now = L.now()

local function rows(ids, token_of)
  local out = {L.fmt(now)}
  for _, id in ipairs(ids) do
    local values = redis.call('HMGET', K.job(id), unpack(RETURN))
    if values[8] == token_of[id] and token_of[id] then
      for i = 1, #RETURN do out[#out + 1] = values[i] end
    end
  end
  return out
end

local replay = L.replayed(rid)
if replay then
  local saved = cjson.decode(replay)
  local token_of = {}
  for i = 1, #saved, 2 do token_of[saved[i]] = saved[i + 1] end
  local ids = {}
  for i = 1, #saved, 2 do ids[#ids + 1] = saved[i] end
  return rows(ids, token_of)
end

local queues = {}
for i = 5, #ARGV do
  L.promote_due(ARGV[i], now, PROMOTE_MAX)
  L.unpark_due(ARGV[i], now, PROMOTE_MAX)
  if redis.call('SISMEMBER', S.paused, ARGV[i]) == 0 then queues[#queues + 1] = ARGV[i] end
end
if #queues == 0 or limit <= 0 then return {L.fmt(now)} end

-- priority levels over every queue, highest first
local levels, order = {}, {}
for _, queue in ipairs(queues) do
  local prios = redis.call('ZRANGE', K.prios(queue), 0, -1, 'WITHSCORES')
  for i = 1, #prios, 2 do
    local p = prios[i]
    if not levels[p] then
      levels[p] = {}
      order[#order + 1] = {p, tonumber(prios[i + 1])}
    end
    table.insert(levels[p], queue)
  end
end
table.sort(order, function(a, b) return a[2] > b[2] end)

local book = L.book(now)
local chosen, to_park = {}, {}
local looked, max_look = 0, math.max(512, limit * 32) * #queues
local PAGE = math.max(16, limit * 2)

-- A paged cursor over a zset in score order; peek() is the current entry
-- {member, score}, take() moves past it.
local function cursor(key, page)
  local c = {key = key, buf = {}, pos = 1, offset = 0, done = false, page = page}
  function c.peek()
    if c.pos > #c.buf then
      if c.done then return nil end
      local got = redis.call('ZRANGE', c.key, c.offset, c.offset + c.page - 1, 'WITHSCORES')
      c.offset = c.offset + c.page
      if #got < 2 * c.page then c.done = true end
      c.page = c.page * 2
      c.buf, c.pos = {}, 1
      for i = 1, #got, 2 do c.buf[#c.buf + 1] = {got[i], tonumber(got[i + 1])} end
    end
    return c.buf[c.pos]
  end
  function c.take() c.pos = c.pos + 1 end
  return c
end

local function before(a, b) return a[2] < b[2] or (a[2] == b[2] and a[1] < b[1]) end

-- Whether a listed signature {member, vtime} may come before an open head
-- {member, vtime}: members start with the zero-padded sequence of the job.
local function sig_before(e, h)
  return e[2] < h[2] or (e[2] == h[2] and string.sub(e[1], 1, 12) < string.sub(h[1], 1, 12))
end

-- Merge the sub-queues of one priority level over every queue: the next job
-- is the smallest (vtime, seq) among the heads of the open sub-queues; a
-- signature set is read only as far as the smallest open head needs (it is
-- in head order, so a sub-queue is opened only when its head comes next).
local function take_level(priority, level_queues)
  local feeds, open = {}, {}
  for _, queue in ipairs(level_queues) do
    feeds[#feeds + 1] = {queue = queue, sigs = cursor(K.sigs(queue, priority), PAGE)}
  end
  local function best_open()
    local best = nil
    for i, sub in ipairs(open) do
      if best == nil or before(sub.jobs.peek(), open[best].jobs.peek()) then best = i end
    end
    return best
  end
  while #chosen < limit and looked < max_look do
    local best = best_open()
    while looked < max_look do
      local feed, next_sig = nil, nil
      for _, f in ipairs(feeds) do
        local e = f.sigs.peek()
        if e and (next_sig == nil or before(e, next_sig)) then feed, next_sig = f, e end
      end
      if not next_sig or (best and not sig_before(next_sig, open[best].jobs.peek())) then
        break
      end
      feed.sigs.take()
      looked = looked + 1
      local sig = string.sub(next_sig[1], 13)
      local sub = {queue = feed.queue, sig = sig,
                   jobs = cursor(K.ready(feed.queue, priority, sig),
                                 math.min(PAGE, limit - #chosen))}
      if sub.jobs.peek() then
        open[#open + 1] = sub
        best = best_open()
      end
    end
    if not best then return end
    local sub = open[best]
    local head = sub.jobs.peek()
    local id = string.sub(head[1], 13)
    local limits = false
    if sub.sig ~= '-' then limits = redis.call('HGET', K.job(id), 'limits') end
    looked = looked + 1
    local admitted, why = true, nil
    if limits then admitted, why = book.admit(cjson.decode(limits), id) end
    if admitted then
      chosen[#chosen + 1] = {id = id, queue = sub.queue, sig = sub.sig, member = head[1],
                             priority = priority, vtime = head[2]}
      sub.jobs.take()
      -- (once the batch is full the merge stops: no need to read further)
      if #chosen < limit and not sub.jobs.peek() then table.remove(open, best) end
    else
      -- its head is blocked, so is every job behind it: park the sub-queue
      -- (after the scan: the signature sets are being paged through)
      table.remove(open, best)
      to_park[#to_park + 1] = {sub.queue, priority, sub.sig, why}
    end
  end
end

for _, level in ipairs(order) do
  if #chosen >= limit or looked >= max_look then break end
  take_level(level[1], levels[level[1]])
end
local parked_now = {}
for _, p in ipairs(to_park) do
  L.park(p[1], p[2], p[3], p[4], now)
  parked_now[K.ready(p[1], p[2], p[3])] = true
end
if #chosen == 0 then return {L.fmt(now)} end

local clocks, emptied, saved, out = {}, {}, {}, {L.fmt(now)}
local started = L.fmt(now)
local idx = L.batch()
-- the stored fields of RETURN (id, token and started_at are known here), and seq
local FETCH = {'task', 'queue', 'payload', 'attempt', 'max_attempts', 'lost', 'lease', 'timeout',
               'enqueued_at', 'run_at', 'schedule', 'fire_time', 'seq'}
for _, c in ipairs(chosen) do
  local jkey = K.job(c.id)
  local v = redis.call('HMGET', jkey, unpack(FETCH))
  local seq = v[13]
  local token = token_base .. ':' .. seq
  local expires = now + tonumber(v[7])
  local attempt = tonumber(v[4]) + 1
  redis.call('HSET', jkey, 'state', 'running', 'attempt', attempt, 'owner', worker,
             'token', token, 'expires', expires, 'started_at', started)
  local n = #out
  out[n + 1], out[n + 2], out[n + 3], out[n + 4] = c.id, v[1], v[2], v[3]
  out[n + 5], out[n + 6], out[n + 7], out[n + 8] = attempt, v[5], v[6], token
  out[n + 9], out[n + 10], out[n + 11], out[n + 12] = v[7], v[8], v[9], v[10]
  out[n + 13], out[n + 14], out[n + 15] = v[11], v[12], started
  local sub = K.ready(c.queue, c.priority, c.sig)
  idx.rem(sub, c.member)
  emptied[sub] = c
  idx.move(c.id, c.queue, seq, 'queued', 'running')
  idx.add(S.leases, expires, c.id)
  if clocks[c.queue] == nil or c.vtime > clocks[c.queue] then clocks[c.queue] = c.vtime end
  saved[#saved + 1] = c.id
  saved[#saved + 1] = token
end
idx.flush()
-- a sub-queue jobs were taken from was listed, unless this claim parked it
for sub, c in pairs(emptied) do L.sub_head(c.queue, c.priority, c.sig, not parked_now[sub]) end
for queue, vtime in pairs(clocks) do
  local old = tonumber(redis.call('HGET', S.vclock, queue) or '0')
  if vtime > old then redis.call('HSET', S.vclock, queue, vtime) end
end
book.save(S.limkeys)
L.remember(rid, cjson.encode(saved))
return out
