-- reclaim_inbox: take back the jobs handed to a worker's idle registration
-- when the worker may have missed one delivery: its wait on the inbox lost
-- its connection, perhaps after Redis popped an entry (Store.claim_wait).
--
-- KEYS[1] prefix: the namespace prefix; idle, inbox, state and job keys are
--                 derived from it (_base.lua)
-- ARGV[1] worker id
-- ARGV[2] the registration's token base (its claim's)
-- ARGV[3..] the registration's queue names
--
-- Ends the registration and empties the inbox (what it held is returned
-- below), then returns L.CLAIMED fields of every job of those queues that
-- runs under a token of that registration ("<base>.<n>:<seq>", see
-- L.hand_off), by sequence. The worker drops those it did receive. This
-- reads every running job of the queues, and runs only after a failed wait.

-- every argument is checked before the first write (_check.lua)
check_str(ARGV[1], 'worker id')
check_str(ARGV[2], 'token base')
check_names(3, 'queue name')

local worker, base = ARGV[1], ARGV[2] .. '.'
L.unidle(worker)
redis.call('DEL', K.inbox(worker))
local out = {}
for i = 3, #ARGV do
  for _, id in ipairs(redis.call('ZRANGE', K.qstate(ARGV[i], 'running'), 0, -1)) do
    local values = redis.call('HMGET', K.job(id), unpack(L.CLAIMED))
    values[1] = id -- (the hash holds no id field: its key names the job)
    if values[8] and string.sub(values[8], 1, #base) == base then
      for j = 1, #L.CLAIMED do out[#out + 1] = values[j] end
    end
  end
end
return out
