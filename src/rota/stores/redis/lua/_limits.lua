-- _limits.lua: flow-control bookkeeping inside one script (mirrors rota.flow
-- and the SQLite store's LimitBook).

-- flow control (mirrors rota.flow and stores/sqlite/_limits.py) ----------

local LIMIT_FIELDS = {'running', 'concurrency', 'override', 'rate', 'burst', 'tokens',
                      'tokens_at', 'failures', 'open_until', 'probe', 'inflight'}

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
      }
      book.keys[key] = s
    end
    return s
  end

  local function refill(s, rate, burst)
    if s.tokens == nil or s.tokens_at == nil then return burst, now end
    local elapsed = math.max(0, now - s.tokens_at)
    return math.min(burst, s.tokens + elapsed * rate), now
  end

  -- How many more jobs with the breaker key may start (rota.flow.breaker_room):
  -- closed, its failures left less the jobs in flight; open, none; half-open,
  -- one probe at a time.
  local function breaker_room(s, threshold)
    if s.open_until == nil then return math.max(0, threshold - s.failures - s.inflight) end
    if now >= s.open_until and s.probe == nil then return 1 end
    return 0
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
      local tokens, at = refill(s, r[2], r[3])
      if tokens < 1 then
        why = {key = r[1], at = at + (1 - tokens) / r[2]}
        book.blocked[r[1]] = why
        return false, why
      end
      buckets[r[1]] = {tokens - 1, at}
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

  -- Free the job's slots; with ok not nil, count the outcome on its breakers.
  -- Keys that freed a slot (or ended a probe) are counted in book.freed.
  function book.release(limits, job_id, ok)
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
      if ok == true then
        s.failures, s.open_until = 0, nil
      elseif ok == false then
        local half_open = s.open_until ~= nil
        s.failures = s.failures + 1
        if s.failures >= b[2] or half_open then
          s.open_until = now + b[3]
        else
          s.open_until = nil
        end
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

