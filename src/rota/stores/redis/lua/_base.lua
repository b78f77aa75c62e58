-- _base.lua: keys, values and index helpers shared by every script.
--
-- scripts.py sends each script as one chunk: a generated line binding the
-- fixed keys, then the library files _base.lua, _ready.lua, _limits.lua and
-- _jobs.lua, _claim.lua (in that order; later ones use the earlier ones), then the
-- script's own file.
--
-- The generated line binds the fixed keys the script declares in its header:
-- local S = {seq = KEYS[2], ...}
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
  -- like L.index_state
  function b.move(id, queue, seq, old, new)
    if old then
      b.rem(K.state(old), id)
      b.rem(K.qstate(queue, old), id)
    end
    if new then
      if new ~= 'queued' then b.add(K.state(new), seq, id) end
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
-- Queued jobs are indexed per queue only (qstate), beside their ready
-- sub-queue: the global state:queued index is no longer written, since a
-- backlog of queued jobs paid an entry (~140 bytes) and a skiplist update
-- per job in it; readers merge the queues' qstate:QUEUE:queued instead.
-- Removing from state:queued stays, for entries written by earlier versions
-- (a ZREM of an absent key costs next to nothing).
function L.index_state(id, queue, seq, old, new)
  if old then
    redis.call('ZREM', K.state(old), id)
    redis.call('ZREM', K.qstate(queue, old), id)
  end
  if new then
    if new ~= 'queued' then redis.call('ZADD', K.state(new), seq, id) end
    redis.call('ZADD', K.qstate(queue, new), seq, id)
  end
end

