-- Job logs in the SQL engine on SQLite (rota.stores.sql.logs). Each query follows a "-- name: NAME" line.
-- A chunk is kept only while its job exists; ? IS NULL switches a filter off.

-- name: append_chunk
INSERT INTO job_logs (job_id, attempt, stream, at, data)
SELECT :job_id, :attempt, :stream, :at, :data
WHERE EXISTS (SELECT 1 FROM jobs WHERE id = :job_id)

-- name: attempt_size
SELECT COALESCE(SUM(length(CAST(data AS BLOB))), 0) FROM job_logs
WHERE job_id = ? AND attempt = ? AND stream != 'rota'

-- name: oldest_chunks
SELECT seq, stream, length(CAST(data AS BLOB)), data FROM job_logs
WHERE job_id = ? AND attempt = ?
ORDER BY seq
LIMIT ?

-- name: drop_chunks_upto
DELETE FROM job_logs WHERE job_id = ? AND attempt = ? AND seq <= ?

-- name: put_note
INSERT INTO job_logs (seq, job_id, attempt, stream, at, data) VALUES (?, ?, ?, 'rota', ?, ?)

-- name: job_logs
SELECT seq, attempt, stream, at, data FROM job_logs
WHERE job_id = :job_id AND seq > :after AND (:attempt IS NULL OR attempt = :attempt)
ORDER BY attempt, seq
LIMIT :limit
