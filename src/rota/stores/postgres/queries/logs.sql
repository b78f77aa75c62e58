-- Job logs in the SQL engine on PostgreSQL (rota.stores.sql.logs).
-- A chunk is kept only while its job exists; a NULL parameter switches a filter off.

-- name: append_chunk
INSERT INTO job_logs (job_id, attempt, stream, at, data)
SELECT %(job_id)s, %(attempt)s, %(stream)s, %(at)s, %(data)s
WHERE EXISTS (SELECT 1 FROM jobs WHERE id = %(job_id)s)

-- name: attempt_size
SELECT coalesce(sum(octet_length(data)), 0) FROM job_logs
WHERE job_id = %s AND attempt = %s AND stream <> 'rota'

-- name: oldest_chunks
SELECT seq, stream, octet_length(data), data FROM job_logs
WHERE job_id = %s AND attempt = %s
ORDER BY seq
LIMIT nullif(%s, -1)

-- name: drop_chunks_upto
DELETE FROM job_logs WHERE job_id = %s AND attempt = %s AND seq <= %s

-- name: put_note
INSERT INTO job_logs (seq, job_id, attempt, stream, at, data) VALUES (%s, %s, %s, 'rota', %s, %s)

-- name: job_logs
SELECT seq, attempt, stream, at, data FROM job_logs
WHERE job_id = %(job_id)s AND seq > %(after)s
  AND (%(attempt)s::integer IS NULL OR attempt = %(attempt)s)
ORDER BY attempt, seq
LIMIT %(limit)s
