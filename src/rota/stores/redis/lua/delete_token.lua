-- delete_token: revoke one of a user's API tokens (Store.delete_token).
--
-- KEYS[1] prefix: the namespace prefix
-- KEYS[2] tokens: token hash -> JSON [user name, label]
-- KEYS[3] the user's tokens, label -> token hash (Keys.usertokens)
-- ARGV[1] user name
-- ARGV[2] token label
--
-- Returns 1 if the token existed, else 0.

check_count(2)
check_str(ARGV[1], 'user name')
check_str(ARGV[2], 'token label')

local digest = redis.call('HGET', KEYS[3], ARGV[2])
if not digest then return 0 end
redis.call('HDEL', KEYS[3], ARGV[2])
redis.call('HDEL', S.tokens, digest)
return 1
