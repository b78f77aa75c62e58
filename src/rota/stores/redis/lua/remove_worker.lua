-- remove_worker: forget a worker that stopped cleanly (Store.remove_worker).
--
-- KEYS[1] prefix: the namespace prefix (unused beyond the hash tag)
-- KEYS[2] workers: worker id -> heartbeat record
-- KEYS[3] heartbeats: worker id -> last heartbeat time
-- ARGV[1] worker id

redis.call('HDEL', S.workers, ARGV[1])
redis.call('ZREM', S.heartbeats, ARGV[1])
return 1
