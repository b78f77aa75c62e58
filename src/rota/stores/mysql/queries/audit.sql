-- The audit log in the SQL engine on MySQL / MariaDB (rota.stores.sql.audit).
-- A page is newest first by (at, seq); a NULL parameter switches a filter off.

-- name: append_audit
INSERT INTO audit (at, actor, role, origin, address, action, target, details)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s)

-- name: audit_page
SELECT seq, at, actor, role, origin, address, action, target, details
FROM audit
WHERE (%(at)s IS NULL OR at < %(at)s OR (at = %(at)s AND seq < %(seq)s))
  AND (%(actor)s IS NULL OR actor = %(actor)s)
  AND (%(action)s IS NULL OR action = %(action)s)
ORDER BY at DESC, seq DESC
LIMIT %(limit)s

-- name: purge_audit
DELETE FROM audit WHERE at < %s
