-- Operator actions in the SQL engine on SQLite (rota.stores.sql.steer).
-- Each query follows a "-- name: NAME" line; {where} takes the named filter
-- fragments (reads.sql) joined by AND.

-- name: retry_job
UPDATE jobs SET state = 'queued', run_at = ?, attempt = 0, lost = 0, finished_at = NULL,
    started_at = NULL, error = NULL, traceback = NULL, cancel_at = NULL, cancel_by = NULL,
    history = json_insert(coalesce(history, '[]'), '$[#]', json(?))
WHERE id = ? AND state IN ('failed', 'cancelled')

-- name: retry_where
UPDATE jobs SET state = 'queued', run_at = ?, attempt = 0, lost = 0, finished_at = NULL,
    started_at = NULL, error = NULL, traceback = NULL,
    history = json_insert(coalesce(history, '[]'), '$[#]', json(?))
WHERE {where}
RETURNING id

-- name: is_failed
state = 'failed'

-- name: retry_candidate
-- A job that can be retried, and its unique key.
SELECT unique_key FROM jobs WHERE id = ? AND state IN ('failed', 'cancelled')

-- name: ids_where
SELECT id FROM jobs WHERE {where} ORDER BY seq

-- name: has_unique_key
unique_key IS NOT NULL

-- name: has_no_unique_key
unique_key IS NULL

-- name: delete_job
DELETE FROM jobs WHERE id = ? AND state != 'running' RETURNING unique_key

-- name: release_pending_unique
DELETE FROM uniques WHERE key = ? AND job_id = ? AND until IS NULL

-- name: purge_pending
DELETE FROM jobs WHERE queue = ? AND state IN ('scheduled', 'queued', 'parked')
RETURNING unique_key, id

-- name: purge_finished_jobs
DELETE FROM jobs WHERE seq IN (SELECT seq FROM jobs INDEXED BY jobs_finished
                               WHERE finished_at < ? LIMIT ?)

-- name: purge_uniques
DELETE FROM uniques WHERE until IS NOT NULL AND until < ?

-- name: purge_stats
DELETE FROM stats WHERE minute > 0 AND minute < ?

-- name: purge_workers
DELETE FROM workers WHERE heartbeat_at < ?

-- name: purge_hosts
-- A host no worker of which has served the queue since the bound: a claim
-- then treats the host as never seen (its jobs wait the grace from their send).
DELETE FROM hosts WHERE (host, queue) IN (SELECT host, queue FROM hosts
                                 WHERE seen_at < ? LIMIT ?)

-- name: purge_fair_keys
-- Fair keys whose last time the queue's clock has reached: a new job of such
-- a key gets the same virtual time as one of a key never seen
-- (flow.virtual_start).
DELETE FROM fair_keys WHERE (queue, key) IN (
    SELECT f.queue, f.key FROM fair_keys f JOIN queues q ON q.name = f.queue
    WHERE f.last <= q.vclock LIMIT ?)

-- name: purge_idle_limits
-- Keys whose state is that of a key never seen (which a claim creates afresh):
-- nothing running or in flight, no override, a closed breaker without
-- failures, and a bucket that has refilled to its burst.
DELETE FROM limits WHERE key IN (
    SELECT key FROM limits
    WHERE running = 0 AND inflight = 0 AND override IS NULL AND rate_override IS NULL
      AND failures = 0 AND open_until IS NULL AND probe IS NULL
      AND (tokens IS NULL OR tokens + max(0, ? - tokens_at) * rate >= burst)
    LIMIT ?)

-- name: limit_key_known
SELECT 1 FROM limits WHERE key = ?

-- name: set_limit_override
INSERT INTO limits (key, override) VALUES (?, ?)
ON CONFLICT (key) DO UPDATE SET override = excluded.override

-- name: set_rate_override
INSERT INTO limits (key, rate_override) VALUES (?, ?)
ON CONFLICT (key) DO UPDATE SET rate_override = excluded.rate_override

-- name: reset_breaker
UPDATE limits SET failures = 0, open_until = NULL, probe = NULL
WHERE key = ? AND open_until IS NOT NULL
