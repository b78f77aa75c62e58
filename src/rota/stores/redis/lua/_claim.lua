-- _claim.lua: claiming, idle workers, and handing new jobs to them.
--
-- A worker whose claim found nothing may stay registered as idle for a
-- while (L.idle): then a script that makes jobs runnable (enqueue, a fired
-- schedule) claims them for that worker at once (L.hand_off) and pushes the
-- claimed rows to the worker's inbox list, which the worker waits on with
-- BLPOP next to the queues' signal lists: the wake-up carries the claim, so
-- a job sent to an idle worker starts after one round trip instead of two.
-- A registration holds the worker's free slots at the time (each hand-off
-- takes some), lasts until its expiry or the worker's next claim, and never
-- outlives a clean stop (remove_worker releases what the inbox still holds).
--
-- Scripts using these functions declare the fixed keys paused, vclock,
-- leases and limkeys.

-- The fields of a claimed job, in reply order (see _codec.CLAIM_FIELDS).
L.CLAIMED = {'id', 'task', 'queue', 'payload', 'attempt', 'max_attempts', 'lost', 'token',
             'lease', 'timeout', 'enqueued_at', 'run_at', 'schedule', 'fire_time',
             'started_at', 'retry'}
local PROMOTE_MAX = 1000

-- An inbox outlives its worker's registration by this many seconds at most.
local INBOX_TTL = 3600

-- Whether a claim in place {host=, grace=} (HostScope) may take the
-- sub-queue of a queue whose head job id was sent to a host (a sub-queue's
-- jobs share their host): its own host's, or once no worker of that host has
-- been seen on the queue for the grace (counted from the head's send if the
-- host was never seen there).
function L.host_takes(place, queue, id, now)
  local job = redis.call('HMGET', K.job(id), 'host', 'enqueued_at', 'run_at')
  if not job[1] or job[1] == place.host then return true end
  local seen = redis.call('HGET', K.hosts(queue), job[1]) or job[2] or job[3]
  return now - (tonumber(seen) or 0) > place.grace
end

-- Lease up to limit runnable jobs of the queues to a worker, as Store.claim
-- describes; each job's token is token_base .. ':' .. its sequence; place:
-- the worker's host scope (L.host_takes). Returns the flat rows (L.CLAIMED
-- per job) and {id, token, ...} of the claimed jobs.
function L.claim(worker, limit, token_base, queue_names, now, place)
  local queues = {}
  for _, queue in ipairs(queue_names) do
    L.promote_due(queue, now, PROMOTE_MAX)
    L.unpark_due(queue, now, PROMOTE_MAX)
    if redis.call('SISMEMBER', S.paused, queue) == 0 then queues[#queues + 1] = queue end
  end
  if #queues == 0 or limit <= 0 then return {}, {} end

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
        local sub = {queue = feed.queue, priority = priority, sig = sig,
                     jobs = cursor(K.ready(feed.queue, priority, sig),
                                   math.min(PAGE, limit - #chosen))}
        local head = sub.jobs.peek()
        if head and (string.sub(sig, 1, 1) ~= 'h'
                     or L.host_takes(place, feed.queue, string.sub(head[1], 13), now)) then
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
        -- (its sub-queue and its entry there, not copies of their fields: a
        -- table of three fields is made per job, where seven cost more)
        chosen[#chosen + 1] = {id = id, sub = sub, head = head}
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
  if #chosen == 0 then return {}, {} end

  local clocks, emptied, saved, out = {}, {}, {}, {}
  local started = L.fmt(now)
  -- Stored values read once per value, not per job: each tonumber of a
  -- string is a strtod, and Redis formats each number passed to redis.call
  -- with 17 digits (a few thousand instructions each).
  -- A stored lease: {duration =, repair = the value to write back in its
  -- place or false, expires = the lease's expiry as a string}.
  local lease_of = {}
  local function lease_for(stored)
    local lease = lease_of[stored]
    if not lease then
      local x = tonumber(stored)
      local duration = L.lease(x)
      lease = {duration = duration, repair = duration ~= x and L.fmt(duration),
               expires = L.fmt(now + duration)}
      lease_of[stored] = lease
    end
    return lease
  end
  -- A stored attempt ("" if none): this claim's, {n =, text =}.
  local attempt_of = {}
  local function attempt_for(stored)
    local attempt = attempt_of[stored]
    if not attempt then
      local n = (tonumber(stored) or 0) + 1
      attempt = {n = n, text = string.format('%d', n)}
      attempt_of[stored] = attempt
    end
    return attempt
  end
  local task_keys = {} -- task -> its index's key, made once per call
  local idx = L.batch()
  -- the stored fields of L.CLAIMED (id, queue, token and started_at are known
  -- here), and seq
  local FETCH = {'task', 'payload', 'attempt', 'max_attempts', 'lost', 'lease', 'timeout',
                 'enqueued_at', 'run_at', 'schedule', 'fire_time', 'seq', 'retry'}
  -- every job is read before the first is written: a stored value that cannot
  -- be used (one not written by rota) must not stop the batch half-way
  -- (kept beside the replies, not in them: a reply is an array, and a named
  -- field added to it grows a hash part)
  local fetched, jkeys, leases, repaired = {}, {}, {}, {}
  for i, c in ipairs(chosen) do
    local jkey = K.job(c.id)
    local v = redis.call('HMGET', jkey, unpack(FETCH))
    local lease = lease_for(v[6])
    if lease.repair then
      v[6] = lease.repair
      repaired[i] = true
    end
    fetched[i], jkeys[i], leases[i] = v, jkey, lease
  end
  for i, c in ipairs(chosen) do
    local jkey, v, sub = jkeys[i], fetched[i], c.sub
    local seq = v[12]
    local token = token_base .. ':' .. seq
    local expires = leases[i].expires
    local attempt = attempt_for(v[3])
    redis.call('HSET', jkey, 'state', 'running', 'attempt', attempt.text,
               'owner', worker, 'token', token, 'expires', expires, 'started_at', started)
    if repaired[i] then redis.call('HSET', jkey, 'lease', v[6]) end
    local n = #out
    out[n + 1], out[n + 2], out[n + 3], out[n + 4] = c.id, v[1], sub.queue, v[2]
    out[n + 5], out[n + 6], out[n + 7], out[n + 8] = attempt.n, v[4], v[5], token
    out[n + 9], out[n + 10], out[n + 11], out[n + 12] = v[6], v[7], v[8], v[9]
    out[n + 13], out[n + 14], out[n + 15], out[n + 16] = v[10], v[11], started, v[13]
    idx.rem(sub.jobs.key, c.head[1])
    emptied[sub] = true
    idx.move(c.id, sub.queue, seq, 'queued', 'running')
    local task_key = task_keys[v[1]]
    if not task_key then
      task_key = K.task(v[1])
      task_keys[v[1]] = task_key
    end
    idx.add(task_key, seq, c.id) -- (queued jobs are not in their task index)
    idx.add(S.leases, expires, c.id)
    local vtime = c.head[2]
    if clocks[sub.queue] == nil or vtime > clocks[sub.queue] then clocks[sub.queue] = vtime end
    saved[#saved + 1] = c.id
    saved[#saved + 1] = token
  end
  idx.flush()
  -- a sub-queue jobs were taken from was listed, unless this claim parked it
  for sub in pairs(emptied) do
    L.sub_head(sub.queue, sub.priority, sub.sig, not parked_now[sub.jobs.key])
  end
  for queue, vtime in pairs(clocks) do
    local old = tonumber(redis.call('HGET', S.vclock, queue) or '0')
    if vtime > old then redis.call('HSET', S.vclock, queue, vtime) end
  end
  book.save(S.limkeys)
  return out, saved
end

-- A stored lease duration as a number: FALLBACK_LEASE for a value that is
-- not one in (0, MAX_SECONDS] (rota never writes one; a claim repairs it).
function L.lease(v)
  local x = tonumber(v)
  if not x or x ~= x or x <= 0 or x > MAX_SECONDS then return FALLBACK_LEASE end
  return x
end

-- The store time of the next delayed job or parked sub-queue of the queues
-- (when a waiting worker should look again), or nil.
function L.next_due(queues)
  local due = nil
  for _, queue in ipairs(queues) do
    for _, key in ipairs({K.delayed(queue), K.parked(queue)}) do
      local head = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
      if #head > 0 and (due == nil or tonumber(head[2]) < due) then due = tonumber(head[2]) end
    end
  end
  return due
end

-- Register a worker with `slots` free slots and host scope place as idle on
-- its queues until the store time `expires`.
function L.idle(worker, slots, token_base, queues, place, expires, now)
  local record = cjson.encode({slots = slots, token = token_base, queues = queues, n = 0,
                               host = place.host, grace = place.grace})
  local ms = math.max(1, math.ceil((expires - now) * 1000))
  redis.call('SET', K.idler(worker), record, 'PX', ms)
  for _, queue in ipairs(queues) do redis.call('ZADD', K.idle(queue), expires, worker) end
end

-- End a worker's idle registration, if it has one.
function L.unidle(worker)
  local record = redis.call('GET', K.idler(worker))
  if not record then return end
  redis.call('DEL', K.idler(worker))
  for _, queue in ipairs(cjson.decode(record).queues) do
    redis.call('ZREM', K.idle(queue), worker)
  end
end

-- A queue just got n runnable jobs: claim them for its idle workers, oldest
-- registration first, and push each worker's rows (after the slots it has
-- left) to its inbox. Returns how many of the queue's jobs were handed off.
-- (With no idle worker that is one ZRANGE; a registration found expired,
-- left by a worker that died, is dropped on the way.)
function L.hand_off(queue, n, now)
  local key = K.idle(queue)
  local width, handed = #L.CLAIMED, 0
  for _ = 1, 64 do
    if handed >= n then break end
    local first = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
    if #first == 0 then break end
    local worker = first[1]
    local record = tonumber(first[2]) > now and redis.call('GET', K.idler(worker))
    if not record then
      redis.call('ZREM', key, worker)
    else
      local idle = cjson.decode(record)
      idle.n = idle.n + 1
      local place = {host = idle.host or '', grace = idle.grace or DEFAULT_HOST_GRACE}
      local rows = L.claim(worker, math.min(idle.slots, n - handed),
                           idle.token .. '.' .. idle.n, idle.queues, now, place)
      if #rows == 0 then break end -- blocked or paused: no other worker would do better
      for i = 3, #rows, width do
        if rows[i] == queue then handed = handed + 1 end
      end
      L.deliver(worker, idle, rows)
    end
  end
  return handed
end

-- Push rows claimed for an idle worker (by its registration idle, whose
-- n was counted for them) to its inbox, after the slots it has left.
function L.deliver(worker, idle, rows)
  idle.slots = idle.slots - #rows / #L.CLAIMED
  table.insert(rows, 1, idle.slots)
  local inbox = K.inbox(worker)
  if redis.call('RPUSH', inbox, cjson.encode(rows)) == 1 then -- a new list
    redis.call('EXPIRE', inbox, INBOX_TTL)
  end
  if idle.slots <= 0 then
    L.unidle(worker)
  else
    redis.call('SET', K.idler(worker), cjson.encode(idle), 'KEEPTTL')
  end
end

-- Take the rows handed to a worker that it has not popped, keeping those
-- whose token still holds the job. Returns the rows and {id, token, ...}.
function L.take_inbox(worker)
  local inbox = K.inbox(worker)
  local entries = redis.call('LRANGE', inbox, 0, -1)
  if #entries == 0 then return {}, {} end
  redis.call('DEL', inbox)
  local width, rows, saved = #L.CLAIMED, {}, {}
  for _, entry in ipairs(entries) do
    local got = cjson.decode(entry)
    for i = 2, #got, width do
      local id, token = got[i], got[i + 7]
      if redis.call('HGET', K.job(id), 'token') == token then
        for j = i, i + width - 1 do rows[#rows + 1] = got[j] end
        saved[#saved + 1] = id
        saved[#saved + 1] = token
      end
    end
  end
  return rows, saved
end

-- Give a running job back to its queue without counting the attempt, if
-- token still holds it. wake: queue -> jobs made claimable (for L.signal).
function L.release(id, token, book, wake)
  local jkey = K.job(id)
  local job = L.job_fields(jkey, {'state', 'token', 'queue', 'priority', 'vtime', 'seq', 'limits',
                              'sig'})
  if job.state ~= 'running' or job.token ~= token then return false end
  if job.limits then book.release(cjson.decode(job.limits), id, nil) end
  redis.call('ZREM', S.leases, id)
  redis.call('HINCRBY', jkey, 'attempt', -1)
  L.put(jkey, {'state', 'queued', 'started_at', false, 'owner', '', 'token', '',
               'expires', ''})
  L.index_state(id, job.queue, job.seq, 'running', 'queued')
  L.ready_add(id, job.queue, job.priority, job.vtime, job.seq, job.sig)
  wake[job.queue] = (wake[job.queue] or 0) + 1
  return true
end

-- End a worker's idle registration and release the jobs handed to it that
-- it has not taken. Returns how many were released.
function L.drop_idle(worker)
  L.unidle(worker)
  local _, held = L.take_inbox(worker)
  if #held == 0 then return 0 end
  local book = L.book(L.now())
  local wake, released = {}, 0
  for i = 1, #held, 2 do
    if L.release(held[i], held[i + 1], book, wake) then released = released + 1 end
  end
  book.save(S.limkeys)
  for queue, n in pairs(wake) do L.signal(queue, n) end
  return released
end
