-- enqueue: store a batch of new jobs atomically (Store.enqueue).
--
-- KEYS[1] prefix: the namespace prefix; job, index, ready, delayed, fair,
--                 unique and signal keys are derived from it (_base.lua)
-- KEYS[2] seq: job sequence counter
-- KEYS[3] queues: set of known queues
-- KEYS[4] vclock: queue -> virtual clock
-- KEYS[5] paused: set of paused queues (hand-off to idle workers, _claim.lua)
-- KEYS[6] leases: running job id -> lease expiry (hand-off)
-- KEYS[7] limkeys: set of flow-control keys (hand-off)
-- ARGV[1] request id, for replay after a reconnect ("" for none)
-- ARGV[2] number of jobs N
-- ARGV[3..] N groups of L.NEW_FIELDS fields (see _jobs.lua, L.enqueue)
--
-- Returns {id, duplicate ("1"/"0"), ...} per job in order, or the error
-- "ROTA_INVALID <message>" with nothing changed.

local replay = L.replayed(ARGV[1])
if replay then return cjson.decode(replay) end
local reply, err = L.enqueue(ARGV, 3, tonumber(ARGV[2]), L.now(), S)
if not reply then return redis.error_reply('ROTA_INVALID ' .. err) end
L.remember(ARGV[1], cjson.encode(reply))
return reply
