-- purge_finished: retention (Store.purge_finished).
--
-- KEYS[1] prefix: the namespace prefix; job and index keys are derived from
--                 it (_base.lua)
-- KEYS[2] finished: finished job id -> finished_at
-- KEYS[3] workers: worker id -> heartbeat record
-- KEYS[4] heartbeats: worker id -> last heartbeat
-- ARGV[1] age in seconds: jobs finished longer ago than this go
-- ARGV[2] most jobs to delete
--
-- Also forgets workers silent for a day. Unique keys held until a deadline
-- and minute stats expire by themselves (Redis TTL on the store's clock).
-- Returns the number of jobs deleted.

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
return #ids
