-- flow_rules.lua: calls one flow-control rule of _limits.lua on the
-- arguments given, so that the golden cases of tests/flow_cases.py run
-- against the Lua rules as they run against rota.flow. Writes nothing.
--
-- KEYS[1] prefix: the namespace prefix (the library binds it per call)
-- ARGV[1] rule: refill | take | breaker_room | breaker_after
-- ARGV[2..] the rule's arguments in its order: a number, "" for nil, "1" or
--   "0" for a flag (breaker_room's probe_running, breaker_after's ok)
-- Returns the rule's results in order, each a number as L.fmt writes it or
-- "" for nil.

local function num(i)
  if ARGV[i] == '' then return nil end
  return tonumber(ARGV[i])
end

local function flag(i) return ARGV[i] == '1' end

local function results(...)
  local out = {}
  for i = 1, select('#', ...) do
    local v = select(i, ...)
    out[i] = v == nil and '' or L.fmt(v)
  end
  return out
end

local rule = ARGV[1]
if rule == 'refill' then
  return results(L.refill(num(2), num(3), num(4), num(5), num(6)))
elseif rule == 'take' then
  return results(L.take(num(2), num(3)))
elseif rule == 'breaker_room' then
  return results(L.breaker_room(num(2), num(3), num(4), flag(5), num(6), num(7)))
elseif rule == 'breaker_after' then
  return results(L.breaker_after(num(2), num(3), flag(4), num(5), num(6), num(7)))
end
error('flow_rules.lua: unknown rule ' .. tostring(rule))
