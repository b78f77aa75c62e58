-- _base.lua: keys, values and index helpers shared by every script.
--
-- scripts.py builds one Redis Functions library: the checks (_check.lua),
-- then _base.lua, _ready.lua, _limits.lua, _jobs.lua and _claim.lua (in
-- that order; later ones use the earlier ones), then each script's own file
-- as a registered function. Each call binds the library's KEYS, ARGV,
-- PREFIX and S (the fixed keys its script declares in its header, by name)
-- before running the script.
--
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

local PREFIX -- KEYS[1], bound by each call (scripts.py)
local L = {}

-- keys -------------------------------------------------------------------

local K = {}
function K.job(id) return PREFIX .. 'job:' .. id end
function K.state(state) return PREFIX .. 'state:' .. state end
function K.qstate(queue, state) return PREFIX .. 'qstate:' .. queue .. ':' .. state end
function K.qpage(queue, page) return PREFIX .. 'qpage:' .. queue .. ':' .. page end
function K.qpages(queue) return PREFIX .. 'qpages:' .. queue end
function K.qcount(queue) return PREFIX .. 'qcount:' .. queue end
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
function K.paced(key) return PREFIX .. 'paced:' .. key end
function K.delayed(queue) return PREFIX .. 'delayed:' .. queue end
function K.fair(queue) return PREFIX .. 'fair:' .. queue end
function K.hosts(queue) return PREFIX .. 'hosts:' .. queue end
function K.limit(key) return PREFIX .. 'limit:' .. key end
function K.unique(key) return PREFIX .. 'unique:' .. key end
function K.signal(queue) return PREFIX .. 'signal:' .. queue end
function K.stats(minute) return PREFIX .. 'stats:' .. minute end
function K.schedule(name) return PREFIX .. 'schedule:' .. name end
function K.req(id) return PREFIX .. 'req:' .. id end
function K.idle(queue) return PREFIX .. 'idle:' .. queue end
function K.idler(worker) return PREFIX .. 'idler:' .. worker end
function K.inbox(worker) return PREFIX .. 'inbox:' .. worker end
function K.logs(id, attempt) return PREFIX .. 'logs:' .. id .. ':' .. attempt end

local STATS_TTL = 2 * 86400
local SIGNAL_CAP = 64
-- HostScope's default grace, for idle registrations written without one.
local DEFAULT_HOST_GRACE = 300
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
  for i = 1, #names do -- (a numeric for: ipairs calls a C function per step)
    local v = values[i]
    if v then t[names[i]] = v end
  end
  return t
end

-- A job's hash leaves out these fields while they hold these values, and its
-- enqueued_at while it equals its run_at (every queued job would otherwise
-- pay for them); L.job_fields reads them back.
L.JOB_DEFAULTS = {priority = '0', fair = '', attempt = '0', lost = '0', sig = '-',
                  max_attempts = '1'}

-- L.fields of a job's hash, with the fields it leaves out at their values.
function L.job_fields(jkey, names)
  local t = L.fields(jkey, names)
  for _, name in ipairs(names) do
    if t[name] == nil then
      if name == 'enqueued_at' then
        t[name] = t.run_at or redis.call('HGET', jkey, 'run_at') or nil
      else
        t[name] = L.JOB_DEFAULTS[name]
      end
    end
  end
  return t
end

-- Before a job's run_at changes: write out its enqueued_at if left out.
function L.pin_enqueued_at(jkey)
  if redis.call('HEXISTS', jkey, 'enqueued_at') == 0 then
    local run_at = redis.call('HGET', jkey, 'run_at')
    if run_at then redis.call('HSET', jkey, 'enqueued_at', run_at) end
  end
end

-- Set fields; a value of false deletes the field. pairs_: {name, value, ...}
-- (never nil inside a table constructor: Lua's length operator stops at holes)
function L.put(key, pairs_)
  local n = #pairs_
  local i = 2
  while i <= n and pairs_[i] do i = i + 2 end
  if i > n then -- nothing to delete (most calls): no copy
    if n > 0 then redis.call('HSET', key, unpack(pairs_)) end
    return
  end
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

-- Whether a JSON list held as a string (or nothing) has no entries.
function L.json_empty(list)
  return not list or list == '' or list == '[]'
end

-- Append one JSON object to a JSON list held as a string.
function L.append_json(list, entry)
  if L.json_empty(list) then return '[' .. entry .. ']' end
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

-- A request id is "SECONDS/RANDOM": how long to remember the reply (the
-- caller's reconnect budget and some), then a random part.
function L.remember(rid, value)
  if rid and rid ~= '' then
    local ttl = tonumber(string.match(rid, '^(%d+)/')) or 60
    redis.call('SET', K.req(rid), value, 'EX', ttl)
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
  -- queued jobs per queue, {seq, id, ...}: their index is paged (L.queued_add)
  b.qadds, b.qrems = {}, {}
  local function queued(t, queue, seq, id)
    local list = t[queue]
    if not list then
      list = {}
      t[queue] = list
    end
    list[#list + 1] = seq
    list[#list + 1] = id
  end
  -- A move puts the same entries in a state's index and in its queue's
  -- index of that state: they are collected once, per queue and state
  -- ({seq, id, ...} for additions, {id, ...} for removals), and flush()
  -- sends each list to both keys.
  b.ins, b.outs = {}, {}
  local function listed(t, queue, state)
    local of_queue = t[queue]
    if not of_queue then
      of_queue = {}
      t[queue] = of_queue
    end
    local list = of_queue[state]
    if not list then
      list = {}
      of_queue[state] = list
    end
    return list
  end
  -- whether the global index of queued jobs that earlier versions wrote is
  -- still there (looked at once per batch)
  local legacy_queued = nil
  -- like L.index_state
  function b.move(id, queue, seq, old, new)
    if old == 'queued' then
      if legacy_queued == nil then
        legacy_queued = redis.call('EXISTS', K.state(old)) == 1
      end
      if legacy_queued then b.rem(K.state(old), id) end
      queued(b.qrems, queue, seq, id)
    elseif old then
      local list = listed(b.outs, queue, old)
      list[#list + 1] = id
    end
    if new == 'queued' then
      queued(b.qadds, queue, seq, id)
    elseif new then
      local list = listed(b.ins, queue, new)
      list[#list + 1] = seq
      list[#list + 1] = id
    end
  end
  -- each list of moved entries to the state's index and the queue's
  local function send(cmd, moved, width)
    for queue, of_queue in pairs(moved) do
      for state, list in pairs(of_queue) do
        L.chunked(cmd, K.state(state), list, width)
        L.chunked(cmd, K.qstate(queue, state), list, width)
      end
    end
  end
  function b.flush()
    for queue, list in pairs(b.qrems) do L.queued_rem(queue, list) end
    send('ZREM', b.outs, 1)
    for _, key in ipairs(b.rem_keys) do L.chunked('ZREM', key, b.rems[key], 1) end
    send('ZADD', b.ins, 2)
    for _, key in ipairs(b.add_keys) do L.chunked('ZADD', key, b.adds[key], 2) end
    for queue, list in pairs(b.qadds) do L.queued_add(queue, list) end
    b.adds, b.rems, b.add_keys, b.rem_keys, b.qadds, b.qrems = {}, {}, {}, {}, {}, {}
    b.ins, b.outs = {}, {}
  end
  return b
end


-- Queued jobs' index, per queue. A backlog of a million queued jobs makes
-- one sorted set too large for Redis's compact encoding: each entry then
-- costs a skiplist node, a hash-table entry and its own string, about 134
-- bytes. So the index is cut into pages of QPAGE consecutive sequence
-- numbers, qpage:QUEUE:N (job id -> seq, for seq // QPAGE == N), each small
-- enough to stay listpack-encoded (about 41 bytes per entry); qpages:QUEUE
-- lists the pages that hold jobs (N -> N) and qcount:QUEUE counts the jobs.
-- Earlier versions kept queued jobs in qstate:QUEUE:queued; those entries
-- are still read and removed (L.queued_rem), never written.
local QPAGE = 128
L.QPAGE = QPAGE

-- Group {seq, id, ...} by page: {page -> {id, ...}} for removals, or
-- {page -> {seq, id, ...}} for additions; and the pages in first-seen order.
local function by_page(list, with_seq)
  local pages, order = {}, {}
  for i = 1, #list, 2 do
    local page = math.floor(tonumber(list[i]) / QPAGE)
    local t = pages[page]
    if not t then
      t = {}
      pages[page] = t
      order[#order + 1] = page
    end
    if with_seq then t[#t + 1] = list[i] end
    t[#t + 1] = list[i + 1]
  end
  return pages, order
end

-- Index queued jobs of one queue: entries {seq, id, ...}.
function L.queued_add(queue, entries)
  local pages, order = by_page(entries, true)
  local added = 0
  for _, page in ipairs(order) do
    added = added + redis.call('ZADD', K.qpage(queue, page), unpack(pages[page]))
    redis.call('ZADD', K.qpages(queue), page, page)
  end
  if added > 0 then redis.call('INCRBY', K.qcount(queue), added) end
end

-- Unindex queued jobs of one queue: entries {seq, id, ...}.
function L.queued_rem(queue, entries)
  local pages, order = by_page(entries, false)
  local removed = 0
  for _, page in ipairs(order) do
    local key, ids = K.qpage(queue, page), pages[page]
    local n = redis.call('ZREM', key, unpack(ids))
    removed = removed + n
    if n < #ids then redis.call('ZREM', K.qstate(queue, 'queued'), unpack(ids)) end
    if n > 0 and redis.call('EXISTS', key) == 0 then redis.call('ZREM', K.qpages(queue), page) end
  end
  if removed > 0 and redis.call('DECRBY', K.qcount(queue), removed) <= 0 then
    redis.call('DEL', K.qcount(queue))
  end
end

-- How many jobs of a queue are queued (the earlier versions' entries included).
function L.queued_count(queue)
  return tonumber(redis.call('GET', K.qcount(queue)) or '0')
    + redis.call('ZCARD', K.qstate(queue, 'queued'))
end

-- Up to limit queued jobs of a queue with a sequence up to bound, oldest
-- pages first (the earlier versions' entries before them).
function L.queued_ids(queue, bound, limit)
  local ids = redis.call('ZRANGEBYSCORE', K.qstate(queue, 'queued'), '-inf', bound,
                         'LIMIT', 0, limit)
  local top = math.floor(tonumber(bound) / QPAGE)
  local pages = redis.call('ZRANGEBYSCORE', K.qpages(queue), '-inf', top, 'LIMIT', 0, limit)
  for _, page in ipairs(pages) do
    if #ids >= limit then break end
    local got = redis.call('ZRANGEBYSCORE', K.qpage(queue, page), '-inf', bound,
                           'LIMIT', 0, limit - #ids)
    for _, id in ipairs(got) do ids[#ids + 1] = id end
  end
  return ids
end


-- Move a job between the state indexes (old may be nil for a new job).
-- Queued jobs are indexed per queue only (the paged index above), beside
-- their ready sub-queue: the global state:queued index is no longer written,
-- since a backlog of queued jobs paid an entry (~140 bytes) and a skiplist
-- update per job in it; readers merge the queues' indexes instead. Removing
-- from state:queued stays, for entries written by earlier versions (a ZREM
-- of an absent key costs next to nothing).
function L.index_state(id, queue, seq, old, new)
  if old then redis.call('ZREM', K.state(old), id) end
  if old == 'queued' then
    L.queued_rem(queue, {seq, id})
  elseif old then
    redis.call('ZREM', K.qstate(queue, old), id)
  end
  if new == 'queued' then
    L.queued_add(queue, {seq, id})
  elseif new then
    redis.call('ZADD', K.state(new), seq, id)
    redis.call('ZADD', K.qstate(queue, new), seq, id)
  end
end

