-- list_jobs: one page of jobs matching filters, newest first (Store.list_jobs).
-- Read only.
--
-- KEYS[1] prefix: the namespace prefix; job keys are derived from it
-- KEYS[2..] candidate indexes, in groups: each group covers every job the
--           filters can match; the smallest is scanned. An index is a zset
--           (job id -> seq) or a queue's paged index of queued jobs, given
--           by its qpages:QUEUE key (_base.lua, L.queued_add)
-- ARGV[1] page size N
-- ARGV[2] cursor: only jobs with seq below it ("" for the newest)
-- ARGV[3] most jobs to look at in this call
-- ARGV[4] queue   ARGV[5] task   ARGV[6] state   ARGV[7] schedule
-- ARGV[8] text to find in the arguments ("" for no filter on each)
-- ARGV[9] number of groups G, then per group: its size and its KEYS indexes,
--         each prefixed with "p" for a paged index
--
-- A scheduled job whose run time has come counts as queued. The scan stops
-- after ARGV[3] jobs; the page is then short but the cursor goes on. A job
-- met in two keys of the group (a queued job that was in its task index
-- before: retried, recovered, released) is taken once; both entries carry
-- its sequence, so a cursor never falls between them.
-- Returns {next cursor or "", now, job, job, ...}, each job as its flat
-- HGETALL reply followed by the field "id" and the job's id (job hashes
-- written since the id left them hold no id field).

-- every argument is checked before the first write (_check.lua)
check_num(ARGV[1], 'page size', 1, MAX_BATCH, true)
check_opt(ARGV[2], 'cursor', 0, 2 ^ 53, true)
check_num(ARGV[3], 'scan cap', 1, MAX_BATCH, true)
check_num(ARGV[9], 'index groups', 1, MAX_BATCH, true)

local limit, cap = tonumber(ARGV[1]), tonumber(ARGV[3])
local upper = L.opt(ARGV[2]) and ('(' .. ARGV[2]) or '+inf'
local queue, task, want = L.opt(ARGV[4]), L.opt(ARGV[5]), L.opt(ARGV[6])
local schedule, search = L.opt(ARGV[7]), L.opt(ARGV[8])
local now = L.now()

-- the queue of a paged index, from its qpages:QUEUE key
local PAGES = #K.qpages('') + 1

-- pick the group with the fewest jobs
local best, best_size, pos = nil, nil, 10
for _ = 1, tonumber(ARGV[9]) do
  local n, group, size = tonumber(ARGV[pos]), {}, 0
  for j = 1, n do
    local ref = ARGV[pos + j]
    local paged = string.sub(ref, 1, 1) == 'p'
    local key = KEYS[tonumber(paged and string.sub(ref, 2) or ref)]
    if paged then
      local index = {queue = string.sub(key, PAGES)}
      group[#group + 1] = index
      size = size + L.queued_count(index.queue)
    else
      group[#group + 1] = {key = key}
      size = size + redis.call('ZCARD', key)
    end
  end
  pos = pos + n + 1
  if best_size == nil or size < best_size then best, best_size = group, size end
end

local fields = {'queue', 'task', 'state', 'schedule', 'run_at'}
if search then fields[#fields + 1] = 'payload' end

local function matches(job)
  if not job.state then return false end
  if queue and job.queue ~= queue then return false end
  if task and job.task ~= task then return false end
  if schedule and job.schedule ~= schedule then return false end
  if want then
    local state = job.state
    if state == 'scheduled' and tonumber(job.run_at) <= now then state = 'queued' end
    if state ~= want then return false end
  end
  if search and not string.find(job.payload, search, 1, true) then return false end
  return true
end

local page = math.min(math.max(limit + 1, 32), cap)
local streams = {}
for _, index in ipairs(best) do
  streams[#streams + 1] = {key = index.key, queue = index.queue, upper = upper, buf = {},
                           pos = 1, done = false}
end

-- The next entries below s.upper of a paged index: from the highest page
-- that holds any, going down past pages with none left below the bound.
local function read_pages(s)
  while true do
    local top = '+inf' -- the highest page that may hold a sequence below the bound
    if s.upper ~= '+inf' then
      top = math.floor((math.ceil(tonumber(string.sub(s.upper, 2))) - 1) / L.QPAGE)
    end
    local pages = redis.call('ZREVRANGEBYSCORE', K.qpages(s.queue), top, '-inf', 'LIMIT', 0, 1)
    if #pages == 0 then
      s.done = true
      return {}
    end
    local got = redis.call('ZREVRANGEBYSCORE', K.qpage(s.queue, pages[1]), s.upper, '-inf',
                           'WITHSCORES', 'LIMIT', 0, page)
    if #got > 0 then return got end
    s.upper = '(' .. L.fmt(tonumber(pages[1]) * L.QPAGE)
  end
end

local function head(s)
  if s.pos > #s.buf then
    if s.done then return nil end
    local got
    if s.queue then
      got = read_pages(s)
    else
      got = redis.call('ZREVRANGEBYSCORE', s.key, s.upper, '-inf', 'WITHSCORES', 'LIMIT', 0, page)
      if #got < 2 * page then s.done = true end
    end
    s.buf, s.pos = {}, 1
    for i = 1, #got, 2 do s.buf[#s.buf + 1] = {got[i], tonumber(got[i + 1])} end
    if #s.buf == 0 then return nil end
    s.upper = '(' .. got[#got]
  end
  return s.buf[s.pos]
end

local found, scanned, last_seq, exhausted, seen = {}, 0, nil, false, {}
while #found <= limit do
  if scanned >= cap then break end
  local pick, pick_head = nil, nil
  for _, s in ipairs(streams) do
    local h = head(s)
    if h and (pick_head == nil or h[2] > pick_head[2]) then pick, pick_head = s, h end
  end
  if not pick then
    exhausted = true
    break
  end
  pick.pos = pick.pos + 1
  scanned = scanned + 1
  last_seq = pick_head[2]
  local id = pick_head[1]
  if not seen[id] then
    seen[id] = true
    if matches(L.fields(K.job(id), fields)) then found[#found + 1] = {id, pick_head[2]} end
  end
end

local cursor = ''
if #found > limit then
  found[#found] = nil
  cursor = L.fmt(found[#found][2])
elseif not exhausted and last_seq then
  cursor = L.fmt(last_seq)
end
local reply = {cursor, L.fmt(now)}
for _, f in ipairs(found) do
  local flat = redis.call('HGETALL', K.job(f[1]))
  flat[#flat + 1] = 'id'
  flat[#flat + 1] = f[1]
  reply[#reply + 1] = flat
end
return reply
