-- Named queries of the SQLite store's audit log. Each starts with "-- name: NAME".
-- A page is newest first by (at, seq); ? IS NULL switches a filter off.

-- name: append_audit
INSERT INTO audit (at, actor, role, origin, address, action, target, details)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)

-- name: audit_page
SELECT seq, at, actor, role, origin, address, action, target, details
FROM audit
WHERE (:at IS NULL OR at < :at OR (at = :at AND seq < :seq))
  AND (:actor IS NULL OR actor = :actor)
  AND (:action IS NULL OR action = :action)
ORDER BY at DESC, seq DESC
LIMIT :limit

-- name: purge_audit
DELETE FROM audit WHERE at < ?
