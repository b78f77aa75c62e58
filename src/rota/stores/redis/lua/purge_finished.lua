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
-- ARGV[1] age in seconds: jobs finished longer ago than this go
-- ARGV[2] most jobs to delete
--
-- Also forgets workers silent for a day, and prunes a slice of each queue's
-- fairness keys: an entry whose virtual time is not past the queue's clock
-- gives a new job the same virtual time as no entry (flow.virtual_start), so
-- dropping it changes nothing. Unique keys held until a deadline and minute
-- stats expire by themselves (Redis TTL on the store's clock).
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
for _, queue in ipairs(redis.call('SMEMBERS', S.queues)) do
  local clock = tonumber(redis.call('HGET', S.vclock, queue) or '0')
  local cursor = redis.call('HGET', S.fairscan, queue) or '0'
  local got = redis.call('HSCAN', K.fair(queue), cursor, 'COUNT', 500)
  local stale = {}
  for i = 1, #got[2], 2 do
    if tonumber(got[2][i + 1]) <= clock then stale[#stale + 1] = got[2][i] end
  end
  if #stale > 0 then L.chunked('HDEL', K.fair(queue), stale, 1) end
  redis.call('HSET', S.fairscan, queue, got[1])
end
return #ids
