-- append_logs: append what running attempts wrote (Store.append_logs).
--
-- KEYS[1] prefix: the namespace prefix; job and logs keys are derived from it
--                 (_base.lua)
-- ARGV[1] cap: most bytes of data one attempt keeps
-- ARGV[2..] groups of 5: job id, attempt, stream, at (0: now), data
--
-- Each attempt's chunks are a list of JSON [seq, stream, at, data]. The job's
-- hash counts them: logseq (the job's last chunk seq), logmax (its highest
-- attempt with a log, so removing the job finds every list), logbytes:A (the
-- data bytes attempt A keeps). Over the cap the oldest chunks are dropped
-- (the newest is always kept) and a first 'rota' chunk counts the bytes
-- dropped. Chunks of jobs that no longer exist are ignored. Returns nothing.

local STREAMS = {log = true, stdout = true, stderr = true, rota = true}

-- every argument is checked before the first write (_check.lua)
local cap = check_num(ARGV[1], 'log cap', 1, 2147483647, true)
check_groups(2, 5, 'log chunks')
for i = 2, #ARGV, 5 do
  check_str(ARGV[i], 'job id')
  check_num(ARGV[i + 1], 'attempt', 0, 2147483647, true)
  if not STREAMS[check_str(ARGV[i + 2], 'log stream')] then
    refuse('log stream must be one of log, stdout, stderr, rota', ARGV[i + 2])
  end
  check_num(ARGV[i + 3], 'log time', 0, MAX_TIME)
end

local now = L.now()
local touched = {}
for i = 2, #ARGV, 5 do
  local id, attempt, data = ARGV[i], tonumber(ARGV[i + 1]), ARGV[i + 4]
  local jkey = K.job(id)
  if redis.call('EXISTS', jkey) == 1 then
    local seq = redis.call('HINCRBY', jkey, 'logseq', 1)
    local at = tonumber(ARGV[i + 3])
    if at == 0 then at = now end
    local lkey = K.logs(id, attempt)
    redis.call('RPUSH', lkey, cjson.encode({seq, ARGV[i + 2], L.fmt(at), data}))
    redis.call('HINCRBY', jkey, 'logbytes:' .. attempt, #data)
    if tonumber(redis.call('HGET', jkey, 'logmax') or 0) < attempt then
      redis.call('HSET', jkey, 'logmax', attempt)
    end
    touched[lkey] = {jkey, attempt}
  end
end

for lkey, t in pairs(touched) do
  local jkey, field = t[1], 'logbytes:' .. t[2]
  local size = tonumber(redis.call('HGET', jkey, field))
  if size > cap then
    local dropped, last = 0, nil
    while size > cap and redis.call('LLEN', lkey) > 1 do
      local chunk = cjson.decode(redis.call('LPOP', lkey))
      if chunk[2] == 'rota' then
        local n = string.match(chunk[4], '^%[%.%.%. (%d+) bytes dropped')
        dropped = dropped + (tonumber(n) or 0)
      else
        dropped = dropped + #chunk[4]
        size = size - #chunk[4]
      end
      last = chunk[1]
    end
    if last then
      local note = '[... ' .. string.format('%d', dropped) .. ' bytes dropped ...]\n'
      redis.call('LPUSH', lkey, cjson.encode({last, 'rota', L.fmt(now), note}))
      redis.call('HSET', jkey, field, size)
    end
  end
end
return 0
