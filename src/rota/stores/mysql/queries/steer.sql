-- Operator actions in the SQL engine on MySQL / MariaDB (rota.stores.sql.steer).
-- Each query follows a "-- name: NAME" line; {where} takes the named filter
-- fragments (reads.sql) joined by AND.

-- name: retry_job
UPDATE jobs SET state = 'queued', run_at = %s, attempt = 0, lost = 0, finished_at = NULL,
    started_at = NULL, error = NULL, traceback = NULL, cancel_at = NULL, cancel_by = NULL,
    history = JSON_ARRAY_APPEND(COALESCE(history, '[]'), '$',
                                JSON_EXTRACT(CONVERT(%s USING utf8mb4), '$'))
WHERE id = %s AND state IN ('failed', 'cancelled')

-- name: retry_where
SELECT id FROM jobs WHERE {where} FOR UPDATE;
UPDATE jobs SET state = 'queued', run_at = %s, attempt = 0, lost = 0, finished_at = NULL,
    started_at = NULL, error = NULL, traceback = NULL,
    history = JSON_ARRAY_APPEND(COALESCE(history, '[]'), '$',
                                JSON_EXTRACT(CONVERT(%s USING utf8mb4), '$'))
WHERE {where}

-- name: is_failed
state = 'failed'

-- name: retry_candidate
-- A job that can be retried (locked until it is), and its unique key.
SELECT unique_key FROM jobs WHERE id = %s AND state IN ('failed', 'cancelled') FOR UPDATE

-- name: ids_where
SELECT id FROM jobs WHERE {where} ORDER BY seq

-- name: has_unique_key
unique_key IS NOT NULL

-- name: has_no_unique_key
unique_key IS NULL

-- name: delete_job
SELECT unique_key FROM jobs WHERE id = %s AND state <> 'running' FOR UPDATE;
DELETE FROM jobs WHERE id = %s AND state <> 'running'

-- name: release_pending_unique
DELETE FROM uniques WHERE `key` = %s AND job_id = %s AND `until` IS NULL

-- name: purge_pending
SELECT unique_key, id FROM jobs
WHERE queue = %s AND state IN ('scheduled', 'queued', 'parked') FOR UPDATE;
DELETE FROM jobs WHERE queue = %s AND state IN ('scheduled', 'queued', 'parked')

-- name: purge_finished_jobs
DELETE FROM jobs WHERE finished_at < %s ORDER BY finished_at LIMIT %s

-- name: purge_uniques
DELETE FROM uniques WHERE `until` IS NOT NULL AND `until` < %s

-- name: purge_stats
DELETE FROM stats WHERE minute > 0 AND minute < %s

-- name: purge_workers
DELETE FROM workers WHERE heartbeat_at < %s

-- name: purge_hosts
-- A host no worker of which has served the queue since the bound: a claim
-- then treats the host as never seen (its jobs wait the grace from their send).
DELETE FROM hosts WHERE seen_at < %s ORDER BY host, queue LIMIT %s

-- name: purge_fair_keys
-- Fair keys whose last time the queue's clock has reached: a new job of such
-- a key gets the same virtual time as one of a key never seen
-- (flow.virtual_start).
DELETE FROM fair_keys
WHERE `last` <= (SELECT vclock FROM queues WHERE name = fair_keys.queue)
ORDER BY queue, `key` LIMIT %s

-- name: purge_idle_limits
-- Keys whose state is that of a key never seen (which a claim creates afresh):
-- nothing running or in flight, no override, a closed breaker without
-- failures, and a bucket that has refilled to its burst.
-- A claim that comes after creates the row again (limit_row).
DELETE FROM limits
WHERE running = 0 AND inflight = 0 AND override IS NULL AND rate_override IS NULL
  AND failures = 0 AND open_until IS NULL AND probe IS NULL
  AND (tokens IS NULL OR tokens + GREATEST(0, %s - tokens_at) * rate >= burst)
ORDER BY `key` LIMIT %s

-- name: limit_key_known
SELECT 1 FROM limits WHERE `key` = %s

-- name: set_limit_override
INSERT INTO limits (`key`, override) VALUES (%s, %s)
ON DUPLICATE KEY UPDATE override = VALUES(override)

-- name: set_rate_override
INSERT INTO limits (`key`, rate_override) VALUES (%s, %s)
ON DUPLICATE KEY UPDATE rate_override = VALUES(rate_override)

-- name: reset_breaker
UPDATE limits SET failures = 0, open_until = NULL, probe = NULL
WHERE `key` = %s AND open_until IS NOT NULL
