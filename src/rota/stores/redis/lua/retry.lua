-- retry: queue failed or cancelled jobs again with fresh attempt counts
-- (Store.retry).
--
-- KEYS[1] prefix: the namespace prefix; job, index, ready, unique and signal
--                 keys are derived from it (_base.lua)
-- KEYS[2] finished: finished job id -> finished_at
-- ARGV[1] who asks ("" for no one named)
-- ARGV[2..] job ids
--
-- Each job takes its unique key back; a job whose key another job holds now
-- stays as it is (L.requeue). Returns 1 per job queued, else 0.

-- every argument is checked before the first write (_check.lua)
if ARGV[1] ~= '' then check_str(ARGV[1], 'by') end
check_names(2, 'job id')

local now = L.now()
local entry = L.by_hand_entry('requeued', now, L.opt(ARGV[1]))
local reply, wake = {}, {}
for i = 2, #ARGV do
  local queue = L.requeue(ARGV[i], now, S.finished, entry)
  if queue then
    wake[queue] = (wake[queue] or 0) + 1
    reply[#reply + 1] = 1
  else
    reply[#reply + 1] = 0
  end
end
for queue, n in pairs(wake) do L.signal(queue, n) end
return reply
