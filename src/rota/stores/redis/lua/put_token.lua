-- put_token: give a user an API token, replacing its token of the same label
-- (Store.put_token).
--
-- KEYS[1] prefix: the namespace prefix
-- KEYS[2] users: user name -> JSON record
-- KEYS[3] tokens: token hash -> JSON [user name, label]
-- KEYS[4] the user's tokens, label -> token hash (Keys.usertokens)
-- ARGV[1] user name
-- ARGV[2] token label
-- ARGV[3] token hash (SHA-256 of the secret, hex)
--
-- Returns 1, or 0 with nothing written if there is no such user.

check_count(3)
check_str(ARGV[1], 'user name')
check_str(ARGV[2], 'token label')
check_str(ARGV[3], 'token hash')

if redis.call('HEXISTS', S.users, ARGV[1]) == 0 then return 0 end
local old = redis.call('HGET', KEYS[4], ARGV[2])
if old then redis.call('HDEL', S.tokens, old) end
redis.call('HSET', KEYS[4], ARGV[2], ARGV[3])
redis.call('HSET', S.tokens, ARGV[3], cjson.encode({ARGV[1], ARGV[2]}))
return 1
