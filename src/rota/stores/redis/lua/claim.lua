-- claim: lease up to N runnable jobs of some queues to one worker
-- (Store.claim, Store.claim_wait).
--
-- KEYS[1] prefix: the namespace prefix; job, ready, prios, delayed, limit,
--                 idle and index keys are derived from it (_base.lua)
-- KEYS[2] paused: set of paused queues
-- KEYS[3] vclock: queue -> virtual clock (advanced to the claimed jobs' time)
-- KEYS[4] leases: running job id -> lease expiry
-- KEYS[5] limkeys: set of flow-control keys
-- ARGV[1] worker id
-- ARGV[2] limit N
-- ARGV[3] token base (each job's token is "<base>:<seq>")
-- ARGV[4] request id, for replay after a reconnect ("" for none)
-- ARGV[5] seconds to stay registered as idle if nothing is claimed ("0": not)
-- ARGV[6] the worker's host name ("" for none), ARGV[7] the grace after which
--         jobs of a host gone from their queue may be taken (HostScope)
-- ARGV[8..] queue names
--
-- Ends the worker's idle registration and takes first the jobs already
-- handed to it (_claim.lua), then claims up to N in all (L.claim: due
-- scheduled jobs move to their ready sets, higher priority first, then fair
-- virtual time, then sequence; a sub-queue whose head is blocked by a
-- flow-control key is parked). When nothing is claimed the worker may
-- register as idle, so that new jobs are handed to it.
-- Returns the store's now, the store time of the next delayed job or parked
-- sub-queue ("" if none or if jobs were claimed), then L.CLAIMED fields per
-- claimed job (see _codec.CLAIM_FIELDS).

-- every argument is checked before the first write (_check.lua)
check_str(ARGV[1], 'worker id')
check_num(ARGV[2], 'claim limit', 1, MAX_BATCH, true)
check_str(ARGV[3], 'token base')
check_num(ARGV[5], 'idle time', 0, MAX_SECONDS)
check_num(ARGV[7], 'host grace', 0, MAX_SECONDS)
check_names(8, 'queue name')

local worker, limit, token_base, rid = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4]
local idle_for = tonumber(ARGV[5])
local place = {host = ARGV[6], grace = tonumber(ARGV[7])}

local now = L.now()

local replay = L.replayed(rid)
if replay then
  local saved = cjson.decode(replay)
  local out = {L.fmt(now), ''}
  for i = 1, #saved, 2 do
    local values = redis.call('HMGET', K.job(saved[i]), unpack(L.CLAIMED))
    values[1] = saved[i] -- (the hash holds no id field: its key names the job)
    if values[8] == saved[i + 1] then
      for j = 1, #L.CLAIMED do out[#out + 1] = values[j] end
    end
  end
  return out
end

local queues = {}
for i = 8, #ARGV do queues[#queues + 1] = ARGV[i] end

L.unidle(worker)
local rows, saved = L.take_inbox(worker)
local more, more_saved = L.claim(worker, limit - #rows / #L.CLAIMED, token_base, queues, now,
                                 place)
local out = {L.fmt(now), ''}
if #rows + #more == 0 then
  if idle_for > 0 and limit > 0 then
    L.idle(worker, limit, token_base, queues, place, now + idle_for, now)
  end
  local due = L.next_due(queues)
  if due then out[2] = L.fmt(due) end
  return out
end
for _, list in ipairs({rows, more}) do
  for _, v in ipairs(list) do out[#out + 1] = v end
end
for _, v in ipairs(more_saved) do saved[#saved + 1] = v end
L.remember(rid, cjson.encode(saved))
return out
