-- put_user: create a user, or change its role and password hash (Store.put_user).
--
-- KEYS[1] prefix: the namespace prefix
-- KEYS[2] users: user name -> JSON [role, password hash, created_at]
-- ARGV[1] user name
-- ARGV[2] role
-- ARGV[3] password hash
-- ARGV[4] created_at, kept from the stored user if there is one
--
-- Returns 1 if the user is new, else 0.

check_count(4)
check_str(ARGV[1], 'user name')
check_str(ARGV[2], 'role')
check_str(ARGV[3], 'password hash')
check_str(ARGV[4], 'created_at')

local created = ARGV[4]
local old = redis.call('HGET', S.users, ARGV[1])
if old then created = cjson.decode(old)[3] end
redis.call('HSET', S.users, ARGV[1], cjson.encode({ARGV[2], ARGV[3], created}))
if old then return 0 end
return 1
