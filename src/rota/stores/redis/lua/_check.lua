-- _check.lua: checks of a script's arguments, run before its first write.
--
-- Redis does not roll back a script that fails after writing, so every
-- script reads and checks all of its ARGV first; a refusal is the error
-- "ROTA_INVALID <message>" (InvalidArgument in Python) with nothing changed.
-- scripts.py puts these functions first in the library and binds the bounds
-- they use from rota.stores._checks, the one home of the bounds both stores
-- apply:
-- MAX_PRIORITY, MAX_COUNT, MAX_LIMIT, MAX_SECONDS, MIN_TIME, MAX_TIME, MAX_RATE,
-- MAX_BATCH.

local function refuse(what, v)
  local shown = tostring(v)
  if #shown > 60 then shown = string.sub(shown, 1, 57) .. '...' end
  error({err = 'ROTA_INVALID ' .. what .. ', not ' .. string.format('%q', shown)})
end

-- What a refusal names: what, of the job with id job when one is given. Made
-- only for a refusal: a send checks a dozen fields of each job, and building
-- each name up front cost a send about 5 % of the server's instructions.
local function label(what, job)
  if job then return 'job ' .. string.format('%q', job) .. ': ' .. what end
  return what
end

-- v as a number within [lo, hi] (NaN and infinities fail), an integer with
-- int; job: the job whose field it is, as label() names it.
local function check_num(v, what, lo, hi, int, job)
  local x = tonumber(v)
  if not x or x ~= x or x < lo or x > hi or (int and x ~= math.floor(x)) then
    refuse(label(what, job) .. ' must be ' .. (int and 'an integer' or 'a number') .. ' from '
           .. string.format('%.17g', lo) .. ' to ' .. string.format('%.17g', hi), v)
  end
  return x
end

-- v as a non-empty string; job as check_num's.
local function check_str(v, what, job)
  if type(v) ~= 'string' or v == '' then
    refuse(label(what, job) .. ' must be a non-empty string', v)
  end
  return v
end

-- v as "0" or "1".
local function check_flag(v, what)
  if v ~= '0' and v ~= '1' then refuse(what .. ' must be "0" or "1"', v) end
end

-- "" (None) or a number, as check_num.
local function check_opt(v, what, lo, hi, int, job)
  if v ~= '' then check_num(v, what, lo, hi, int, job) end
end

-- ARGV from first to the end: at least one group of width arguments.
local function check_groups(first, width, what)
  local n = (#ARGV - first + 1) / width
  if n < 1 or n ~= math.floor(n) then
    refuse(what .. ' must come as groups of ' .. width .. ' arguments', #ARGV - first + 1)
  end
end

-- ARGV from first to the end: job ids and tokens (LeaseRef), in pairs.
local function check_leases(first)
  check_groups(first, 2, 'leases')
  for i = first, #ARGV, 2 do
    check_str(ARGV[i], 'job id')
    if ARGV[i + 1] == '' then -- (ARGV holds strings; the name is made only for a refusal)
      refuse('token of job ' .. string.format('%q', ARGV[i]) .. ' must be a non-empty string', '')
    end
  end
end

-- ARGV from first to the end: at least one non-empty name.
local function check_names(first, what)
  if #ARGV < first then refuse('at least one ' .. what .. ' is needed', #ARGV) end
  for i = first, #ARGV do check_str(ARGV[i], what) end
end

-- Exactly n arguments.
local function check_count(n)
  if #ARGV ~= n then refuse('the script takes ' .. n .. ' arguments', #ARGV) end
end

-- The job fields of L.enqueue (_jobs.lua) starting at args[b], as
-- rota.stores._checks.new_job checks them (their encoded form).
local function check_job(args, b)
  local id = check_str(args[b], 'job id')
  check_str(args[b + 1], 'task', id)
  check_str(args[b + 2], 'queue', id)
  check_num(args[b + 4], 'priority', -MAX_PRIORITY, MAX_PRIORITY, true, id)
  check_num(args[b + 5], 'delay', -MAX_SECONDS, MAX_SECONDS, nil, id)
  check_opt(args[b + 6], 'run_at', MIN_TIME, MAX_TIME, nil, id)
  check_num(args[b + 7], 'max_attempts', 1, MAX_COUNT, true, id)
  check_num(args[b + 8], 'max_lost', 1, MAX_COUNT, true, id)
  if check_num(args[b + 9], 'lease', 0, MAX_SECONDS, nil, id) == 0 then
    refuse(label('lease must be above 0', id), args[b + 9])
  end
  if args[b + 10] ~= '' and check_num(args[b + 10], 'timeout', 0, MAX_SECONDS, nil, id) == 0 then
    refuse(label('timeout must be above 0', id), args[b + 10])
  end
  if args[b + 11] ~= '' then
    local ok, limits = pcall(cjson.decode, args[b + 11])
    if not ok or type(limits) ~= 'table' then
      refuse(label('limits must be JSON', id), args[b + 11])
    end
    for _, part in ipairs({'c', 'r', 'b'}) do
      local list = limits[part] or {}
      if type(list) ~= 'table' then
        refuse(label('limits must be lists', id), args[b + 11])
      end
      for _, entry in ipairs(list) do
        if type(entry) ~= 'table' then
          refuse(label('limits must be lists', id), args[b + 11])
        end
      end
    end
    for _, c in ipairs(limits.c or {}) do
      check_str(c[1], 'concurrency key', id)
      check_num(c[2], 'concurrency limit', 0, MAX_LIMIT, true, id)
    end
    for _, r in ipairs(limits.r or {}) do
      check_str(r[1], 'rate key', id)
      if check_num(r[2], 'rate', 0, MAX_RATE, nil, id) == 0 then
        refuse(label('rate must be above 0', id), r[2])
      end
      check_num(r[3], 'burst', 1, MAX_LIMIT, true, id)
    end
    for _, k in ipairs(limits.b or {}) do
      check_str(k[1], 'breaker key', id)
      check_num(k[2], 'breaker failures', 1, MAX_COUNT, true, id)
      check_num(k[3], 'breaker cooldown', 0, MAX_SECONDS, nil, id)
      if k[4] ~= nil then
        if type(k[4]) ~= 'table' then
          refuse(label('ignored kinds must be a list', id), args[b + 11])
        end
        for _, kind in ipairs(k[4]) do check_str(kind, 'ignored kind', id) end
      end
    end
  end
  check_opt(args[b + 14], 'unique_for', 0, MAX_SECONDS, nil, id)
  check_opt(args[b + 16], 'fire_time', MIN_TIME, MAX_TIME, nil, id)
  if args[b + 18] ~= '' then
    local ok, policy = pcall(cjson.decode, args[b + 18])
    if not ok or type(policy) ~= 'table' then
      refuse(label('retry policy must be JSON', id), args[b + 18])
    end
  end
end
