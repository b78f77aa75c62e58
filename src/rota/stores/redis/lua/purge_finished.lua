-- purge_finished: retention (Store.purge_finished).
--
-- KEYS[1] prefix: the namespace prefix; job and index keys are derived from
--                 it (_base.lua)
-- KEYS[2] finished: finished job id -> finished_at
-- KEYS[3] workers: worker id -> heartbeat record
-- KEYS[4] heartbeats: worker id -> last heartbeat
-- KEYS[5] queues: set of known queues
-- KEYS[6] vclock: queue -> virtual clock
-- KEYS[7] fairscan: queue -> HSCAN cursor of the pruning of its fair: hash
-- KEYS[8] limkeys: every flow-control key seen
-- KEYS[9] limscan: SSCAN cursor of the pruning of limkeys
-- KEYS[10] hostscan: queue -> HSCAN cursor of the pruning of its hosts: hash
-- ARGV[1] age in seconds: jobs finished longer ago than this go
-- ARGV[2] most jobs to delete
--
-- Also forgets workers silent for a day, and prunes a slice of what per-key
-- state carries nothing a key never seen would not:
-- - each queue's fairness keys: an entry whose virtual time is not past the
--   queue's clock gives a new job the same virtual time as no entry
--   (flow.virtual_start);
-- - each queue's hosts: a host no worker has served the queue from for a day
--   (the workers' horizon) is one never seen, whose jobs wait the grace from
--   their send;
-- - flow-control keys with nothing running or in flight, no override, a
--   closed breaker without failures and a full bucket (L.key_idle): a claim
--   starts a missing key afresh, as a new one.
-- Unique keys held until a deadline and minute stats expire by themselves
-- (Redis TTL on the store's clock).
-- Returns the number of jobs deleted.

-- every argument is checked before the first write (_check.lua)
check_count(2)
check_num(ARGV[1], 'retention age', 0, MAX_SECONDS)
check_num(ARGV[2], 'purge limit', 1, MAX_BATCH, true)

local now = L.now()
local cutoff = now - tonumber(ARGV[1])
local ids = redis.call('ZRANGEBYSCORE', S.finished, '-inf', '(' .. L.fmt(cutoff),
                       'LIMIT', 0, tonumber(ARGV[2]))
for _, id in ipairs(ids) do
  if not L.remove_job(id, 'keep', S.finished) then redis.call('ZREM', S.finished, id) end
end
local gone = redis.call('ZRANGEBYSCORE', S.heartbeats, '-inf', '(' .. L.fmt(now - 86400))
for _, worker in ipairs(gone) do
  redis.call('HDEL', S.workers, worker)
  redis.call('ZREM', S.heartbeats, worker)
end
-- One slice of a hash's fields, from the cursor kept under field of
-- cursors: those whose value stale(value) holds are deleted.
local function prune_slice(hash, cursors, field, stale)
  local got = redis.call('HSCAN', hash, redis.call('HGET', cursors, field) or '0', 'COUNT', 500)
  local drop = {}
  for i = 1, #got[2], 2 do
    if stale(tonumber(got[2][i + 1])) then drop[#drop + 1] = got[2][i] end
  end
  if #drop > 0 then L.chunked('HDEL', hash, drop, 1) end
  redis.call('HSET', cursors, field, got[1])
end

local horizon = now - 86400
for _, queue in ipairs(redis.call('SMEMBERS', S.queues)) do
  local clock = tonumber(redis.call('HGET', S.vclock, queue) or '0')
  prune_slice(K.fair(queue), S.fairscan, queue, function(last) return last <= clock end)
  prune_slice(K.hosts(queue), S.hostscan, queue, function(seen) return seen < horizon end)
end

local got = redis.call('SSCAN', S.limkeys, redis.call('GET', S.limscan) or '0', 'COUNT', 500)
local idle = {}
for _, key in ipairs(got[2]) do
  if L.key_idle(K.limit(key), now) then idle[#idle + 1] = key end
end
for _, key in ipairs(idle) do redis.call('DEL', K.limit(key)) end
if #idle > 0 then L.chunked('SREM', S.limkeys, idle, 1) end
redis.call('SET', S.limscan, got[1])
return #ids
