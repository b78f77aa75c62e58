-- Add URLs to a seen-set (a Bloom filter bitmap) and say which were new.
-- KEYS[1]  the bitmap
-- ARGV[1]  k, the bit positions per URL
-- ARGV[2..] the URLs' positions, k per URL in order
-- Returns one 0/1 per URL: 1 if any of its bits was unset (the URL was new).
local key, k = KEYS[1], tonumber(ARGV[1])
local out, n = {}, 0
for i = 2, #ARGV, k do
  local new = 0
  for j = i, i + k - 1 do
    if redis.call('SETBIT', key, ARGV[j], 1) == 0 then new = 1 end
  end
  n = n + 1
  out[n] = new
end
return out
