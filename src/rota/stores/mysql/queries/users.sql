-- Named queries of the users verbs on MySQL / MariaDB (rota.stores.sql.users).

-- name: upsert_user
INSERT INTO users (name, role, password_hash, created_at) VALUES (%s, %s, %s, %s)
ON DUPLICATE KEY UPDATE role = VALUES(role), password_hash = VALUES(password_hash)

-- name: get_user
SELECT name, role, password_hash, created_at FROM users WHERE name = %s

-- name: all_users
SELECT name, role, password_hash, created_at FROM users ORDER BY name

-- name: delete_user
DELETE FROM users WHERE name = %s

-- name: user_token_labels
SELECT label FROM user_tokens WHERE name = %s ORDER BY label

-- name: all_token_labels
SELECT name, label FROM user_tokens ORDER BY name, label

-- name: delete_user_tokens
DELETE FROM user_tokens WHERE name = %s

-- name: put_token
INSERT INTO user_tokens (token_hash, name, label) VALUES (%s, %s, %s)

-- name: delete_token
DELETE FROM user_tokens WHERE name = %s AND label = %s

-- name: token_owner
SELECT name FROM user_tokens WHERE token_hash = %s
