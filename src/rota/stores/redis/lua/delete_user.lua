-- delete_user: remove a user and every token it holds (Store.delete_user).
--
-- KEYS[1] prefix: the namespace prefix
-- KEYS[2] users: user name -> JSON record
-- KEYS[3] tokens: token hash -> JSON [user name, label]
-- KEYS[4] the user's tokens, label -> token hash (Keys.usertokens)
-- ARGV[1] user name
--
-- Returns 1 if the user existed, else 0.

check_count(1)
check_str(ARGV[1], 'user name')

for _, digest in ipairs(redis.call('HVALS', KEYS[4])) do
  redis.call('HDEL', S.tokens, digest)
end
redis.call('DEL', KEYS[4])
return redis.call('HDEL', S.users, ARGV[1])
