-- Job logs in the SQL engine on MySQL / MariaDB (rota.stores.sql.logs).
-- A chunk is kept only while its job exists; a NULL parameter switches a filter off.

-- name: append_chunk
INSERT INTO job_logs (job_id, attempt, stream, at, data)
SELECT %(job_id)s, %(attempt)s, %(stream)s, %(at)s, %(data)s FROM DUAL
WHERE EXISTS (SELECT 1 FROM jobs WHERE id = %(job_id)s)

-- name: attempt_size
SELECT CAST(COALESCE(SUM(OCTET_LENGTH(data)), 0) AS SIGNED) FROM job_logs
WHERE job_id = %s AND attempt = %s AND stream <> 'rota'

-- name: oldest_chunks
-- The first chunks of an attempt, as many as the last parameter (-1: all).
SELECT seq, stream, nbytes, data FROM (
    SELECT seq, stream, OCTET_LENGTH(data) AS nbytes, data,
           ROW_NUMBER() OVER (ORDER BY seq) AS n
    FROM job_logs WHERE job_id = %s AND attempt = %s
) AS chunks
WHERE n <= COALESCE(NULLIF(%s, -1), n)
ORDER BY seq

-- name: drop_chunks_upto
DELETE FROM job_logs WHERE job_id = %s AND attempt = %s AND seq <= %s

-- name: put_note
INSERT INTO job_logs (seq, job_id, attempt, stream, at, data) VALUES (%s, %s, %s, 'rota', %s, %s)

-- name: job_logs
SELECT seq, attempt, stream, at, data FROM job_logs
WHERE job_id = %(job_id)s AND seq > %(after)s
  AND (%(attempt)s IS NULL OR attempt = %(attempt)s)
ORDER BY attempt, seq
LIMIT %(limit)s
