-- _limits.lua: flow-control rules and their bookkeeping inside one script.
--
-- The rules (L.refill, L.take, L.breaker_room, L.breaker_after) are those of
-- rota.flow, name for name and argument for argument; the golden cases of
-- tests/flow_cases.py run against both (tests/conformance/test_lua_flow.py
-- calls these functions directly). The book mirrors the SQL engine's limit
-- book (LimitBook).

-- rules ------------------------------------------------------------------

-- The bucket (tokens, at) at now: refilled at rate tokens/s, capped at burst.
-- A bucket never seen before (tokens nil) starts full. Its time never goes
-- back: a clock stepping back credits nothing now, nor the same interval again
-- once it has caught up.
function L.refill(tokens, at, rate, burst, now)
  if tokens == nil or at == nil then return burst, now end
  local elapsed = math.max(0, now - at)
  return math.min(burst, tokens + elapsed * rate), math.max(at, now)
end

-- The bucket (tokens, at) after taking one token, or nil when it has less than one.
function L.take(tokens, at)
  if tokens < 1 then return nil end
  return tokens - 1, at
end

-- How many more jobs with a breaker key may start now: closed (open_until
-- nil), its failures left less the jobs in flight; open and cooling down,
-- none; cooled down (half-open), one probe at a time.
function L.breaker_room(failures, open_until, inflight, probe_running, threshold, now)
  if open_until == nil then return math.max(0, threshold - failures - inflight) end
  if now >= open_until and not probe_running then return 1 end
  return 0
end

-- The breaker's failures, open_until after an attempt ended (ok true or
-- false): a success closes it; a failure counts, and reaching threshold
-- consecutive failures (or failing while open) opens it for cooldown s.
function L.breaker_after(failures, open_until, ok, threshold, cooldown, now)
  if ok then return 0, nil end
  failures = failures + 1
  if failures >= threshold or open_until ~= nil then return failures, now + cooldown end
  return failures, nil
end

-- Whether the flow-control key stored at hash has the state of a key never
-- seen, which a claim starts afresh: nothing running or in flight, no
-- override, a closed breaker without failures, and a bucket that has refilled
-- to its burst (or none).
function L.key_idle(hash, now)
  local r = redis.call('HMGET', hash, 'running', 'inflight', 'failures', 'override',
                       'rate_override', 'open_until', 'probe', 'tokens', 'tokens_at', 'rate',
                       'burst')
  for i = 1, 3 do
    if (tonumber(r[i]) or 0) ~= 0 then return false end
  end
  for i = 4, 7 do
    if L.opt(r[i]) ~= nil then return false end
  end
  local tokens, at, rate, burst = tonumber(r[8]), tonumber(r[9]), tonumber(r[10]), tonumber(r[11])
  if tokens == nil then return true end
  if at == nil or rate == nil or burst == nil then return false end
  return tokens + math.max(0, now - at) * rate >= burst
end

-- Whether a failure on an error of kinds (its exception classes, one per
-- line) is one a breaker ignoring the list ignore does not count.
local function ignores(ignore, kinds)
  if not kinds or kinds == '' then return false end
  local lines = '\n' .. kinds .. '\n'
  for _, kind in ipairs(ignore) do
    if string.find(lines, '\n' .. kind .. '\n', 1, true) then return true end
  end
  return false
end

-- the book ---------------------------------------------------------------

local LIMIT_FIELDS = {'running', 'concurrency', 'override', 'rate', 'burst', 'tokens',
                      'tokens_at', 'failures', 'open_until', 'probe', 'inflight',
                      'rate_override'}

function L.book(now)
  local book = {now = now, keys = {}, dirty = {}, blocked = {}, freed = {}}

  function book.get(key)
    local s = book.keys[key]
    if not s then
      local r = redis.call('HMGET', K.limit(key), unpack(LIMIT_FIELDS))
      s = {
        running = tonumber(r[1]) or 0, concurrency = tonumber(r[2]), override = tonumber(r[3]),
        rate = tonumber(r[4]), burst = tonumber(r[5]), tokens = tonumber(r[6]),
        tokens_at = tonumber(r[7]), failures = tonumber(r[8]) or 0,
        open_until = tonumber(r[9]), probe = L.opt(r[10]), inflight = tonumber(r[11]) or 0,
        rate_override = tonumber(r[12]), -- set_rate's; save leaves it be
      }
      book.keys[key] = s
    end
    return s
  end

  local function breaker_room(s, threshold)
    return L.breaker_room(s.failures, s.open_until, s.inflight, s.probe ~= nil, threshold, now)
  end

  -- Take the job's slots and tokens if every key allows it; else block the
  -- first key that does not, take nothing and return false and why:
  -- {key=, at= (when it may pass: rate, open breaker), breaker= true}.
  function book.admit(limits, job_id)
    local buckets = {}
    for _, c in ipairs(limits.c or {}) do
      local why = book.blocked[c[1]]
      if why then return false, why end
      local s = book.get(c[1])
      if s.running >= (s.override or c[2]) then
        why = {key = c[1]}
        book.blocked[c[1]] = why
        return false, why
      end
    end
    for _, r in ipairs(limits.r or {}) do
      local why = book.blocked[r[1]]
      if why then return false, why end
      local s = book.get(r[1])
      local rate = s.rate_override or r[2]
      local tokens, at = L.refill(s.tokens, s.tokens_at, rate, r[3], now)
      local left = L.take(tokens, at)
      if left == nil then -- (the bucket earns nothing before its own time, at)
        why = {key = r[1], at = at + (1 - tokens) / rate}
        book.blocked[r[1]] = why
        return false, why
      end
      buckets[r[1]] = {left, at}
    end
    for _, b in ipairs(limits.b or {}) do
      local why = book.blocked[b[1]]
      if why then return false, why end
      local s = book.get(b[1])
      if breaker_room(s, b[2]) == 0 then
        if s.open_until ~= nil and now < s.open_until then
          why = {key = b[1], at = s.open_until, breaker = true}
        else
          why = {key = b[1]} -- its room is in flight (or its probe is running)
        end
        book.blocked[b[1]] = why
        return false, why
      end
    end
    for _, c in ipairs(limits.c or {}) do
      local s = book.get(c[1])
      s.running = s.running + 1
      s.concurrency = c[2]
      book.dirty[c[1]] = true
    end
    for _, r in ipairs(limits.r or {}) do
      local s = book.get(r[1])
      s.rate, s.burst = r[2], r[3]
      s.tokens, s.tokens_at = buckets[r[1]][1], buckets[r[1]][2]
      book.dirty[r[1]] = true
    end
    for _, b in ipairs(limits.b or {}) do
      local s = book.get(b[1])
      s.inflight = s.inflight + 1
      if s.open_until ~= nil then s.probe = job_id end
      book.dirty[b[1]] = true
    end
    return true
  end

  -- Free the job's slots; with ok not nil, count the outcome on its breakers,
  -- but a failure on an error of kinds (its exception classes, one per line)
  -- none that ignores one of them (a breaker's b[4]). Keys that freed a slot
  -- (or ended a probe) are counted in book.freed.
  function book.release(limits, job_id, ok, kinds)
    for _, c in ipairs(limits.c or {}) do
      local s = book.get(c[1])
      s.running = math.max(0, s.running - 1)
      book.dirty[c[1]] = true
      book.freed[c[1]] = (book.freed[c[1]] or 0) + 1
    end
    for _, b in ipairs(limits.b or {}) do
      local s = book.get(b[1])
      s.inflight = math.max(0, s.inflight - 1)
      if s.probe == job_id then s.probe = nil end
      local was_open_until = s.open_until
      if ok ~= nil and not (ok == false and b[4] and ignores(b[4], kinds)) then
        s.failures, s.open_until = L.breaker_after(s.failures, s.open_until, ok, b[2], b[3], now)
      end
      -- a cooldown began: a claim parks its sub-queues again until it ends;
      -- else as many come back as jobs may start now
      local room = breaker_room(s, b[2])
      if s.open_until ~= nil and s.open_until ~= was_open_until then room = WAKE_ALL end
      if room > 0 then book.freed[b[1]] = (book.freed[b[1]] or 0) + room end
      book.dirty[b[1]] = true
    end
  end

  local function num(v)
    if v == nil then return false end
    return L.fmt(v)
  end

  -- Write every changed key back.
  function book.save(limkeys)
    for key in pairs(book.dirty) do
      local s = book.keys[key]
      L.put(K.limit(key), {
        'running', L.fmt(s.running), 'concurrency', num(s.concurrency),
        'override', num(s.override), 'rate', num(s.rate), 'burst', num(s.burst),
        'tokens', num(s.tokens), 'tokens_at', num(s.tokens_at),
        'failures', L.fmt(s.failures), 'open_until', num(s.open_until), 'probe', s.probe or false,
        'inflight', L.fmt(s.inflight),
      })
      redis.call('SADD', limkeys, key)
    end
    book.dirty = {}
    for key, n in pairs(book.freed) do L.wake(key, 2 * n + 1) end
    book.freed = {}
  end

  return book
end

