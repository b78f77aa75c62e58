-- heartbeat: record a worker's liveness and load (Store.heartbeat).
--
-- KEYS[1] prefix: the namespace prefix (hosts:QUEUE keys are derived from it)
-- KEYS[2] workers: worker id -> heartbeat record (JSON, without heartbeat_at)
-- KEYS[3] heartbeats: worker id -> last heartbeat time (the store's now)
-- ARGV[1] worker id
-- ARGV[2] record

local now = L.now()
redis.call('HSET', S.workers, ARGV[1], ARGV[2])
redis.call('ZADD', S.heartbeats, now, ARGV[1])
-- its host is seen on its queues (claims of other hosts' workers read it)
local ok, record = pcall(cjson.decode, ARGV[2])
if ok and type(record) == 'table' and type(record.host) == 'string' then
  for _, queue in ipairs(type(record.queues) == 'table' and record.queues or {}) do
    if type(queue) == 'string' then redis.call('HSET', K.hosts(queue), record.host, L.fmt(now)) end
  end
end
return L.fmt(now)
