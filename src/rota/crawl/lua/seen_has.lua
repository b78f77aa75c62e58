-- Whether URLs are in a seen-set (a Bloom filter bitmap); changes nothing.
-- KEYS[1]  the bitmap
-- ARGV[1]  k, the bit positions per URL
-- ARGV[2..] the URLs' positions, k per URL in order
-- Returns one 0/1 per URL: 1 if all of its bits are set.
local key, k = KEYS[1], tonumber(ARGV[1])
local out, n = {}, 0
for i = 2, #ARGV, k do
  local has = 1
  for j = i, i + k - 1 do
    if redis.call('GETBIT', key, ARGV[j]) == 0 then has = 0; break end
  end
  n = n + 1
  out[n] = has
end
return out
