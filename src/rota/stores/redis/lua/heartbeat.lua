-- heartbeat: record a worker's liveness and load (Store.heartbeat).
--
-- KEYS[1] prefix: the namespace prefix (unused beyond the hash tag)
-- KEYS[2] workers: worker id -> heartbeat record (JSON, without heartbeat_at)
-- KEYS[3] heartbeats: worker id -> last heartbeat time (the store's now)
-- ARGV[1] worker id
-- ARGV[2] record

local now = L.now()
redis.call('HSET', S.workers, ARGV[1], ARGV[2])
redis.call('ZADD', S.heartbeats, now, ARGV[1])
return L.fmt(now)
