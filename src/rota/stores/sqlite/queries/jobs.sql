-- The job verbs of the SQL engine on SQLite (rota.stores.sql.jobs, limits, uniques, modes).
-- Each query follows a "-- name: NAME" line; {values} takes a list of ? marks.

-- name: insert_job
-- A reused id fails the insert (and the transaction).
INSERT INTO jobs (id, task, queue, state, payload, priority, vtime, fair_key, run_at,
                  enqueued_at, max_attempts, max_lost, lease, timeout, limits,
                  unique_key, unique_for, schedule, fire_time, host, retry)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)

-- name: job_exists
SELECT 1 FROM jobs WHERE id = ?

-- name: ensure_queue
INSERT OR IGNORE INTO queues (name) VALUES (?)

-- name: queue_clock
SELECT vclock FROM queues WHERE name = ?

-- name: fair_key_last
SELECT last FROM fair_keys WHERE queue = ? AND key = ?

-- name: set_fair_key_last
INSERT INTO fair_keys (queue, key, last) VALUES (?, ?, ?)
ON CONFLICT (queue, key) DO UPDATE SET last = excluded.last

-- name: unique_holder
SELECT u.job_id, u.until, j.state
FROM uniques u LEFT JOIN jobs j ON j.id = u.job_id
WHERE u.key = ?

-- name: hold_unique
INSERT INTO uniques (key, job_id, until) VALUES (?, ?, NULL)
ON CONFLICT (key) DO UPDATE SET job_id = excluded.job_id, until = NULL

-- name: promote_due
-- Reads the store clock itself (rota_now(), the connection's Python clock).
UPDATE jobs INDEXED BY jobs_due SET state = 'queued'
WHERE state = 'scheduled' AND run_at <= rota_now()

-- name: ready_candidates
-- Nothing from a paused queue; a job sent to a host only for a claim of that
-- host, or once the host's workers on the queue are gone for the grace
-- (rota.models.HostScope).
SELECT seq, priority, vtime, limits, id FROM jobs INDEXED BY jobs_ready
WHERE state = 'queued' AND queue = ?
  AND queue NOT IN (SELECT name FROM queues WHERE paused = 1)
  AND (host IS NULL OR host = ?
       OR COALESCE((SELECT seen_at FROM hosts h WHERE h.host = jobs.host AND h.queue = jobs.queue),
                   enqueued_at) < rota_now() - ?)
ORDER BY priority DESC, vtime, seq
LIMIT ? OFFSET ?

-- name: limit_row
SELECT running, concurrency, override, rate, burst, tokens, tokens_at, failures,
       open_until, probe, inflight, rate_override
FROM limits WHERE key = ?

-- name: save_limit_row
INSERT INTO limits (key, running, concurrency, override, rate, burst, tokens, tokens_at,
                    failures, open_until, probe, inflight)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (key) DO UPDATE SET
    running = excluded.running, concurrency = excluded.concurrency,
    override = excluded.override, rate = excluded.rate, burst = excluded.burst,
    tokens = excluded.tokens, tokens_at = excluded.tokens_at,
    failures = excluded.failures, open_until = excluded.open_until, probe = excluded.probe,
    inflight = excluded.inflight

-- name: claim_rows
-- A lease that is not a sane duration (written by something other than rota)
-- is taken as the fallback lease (the two ? after the token), and stored.
UPDATE jobs SET state = 'running', attempt = attempt + 1, lease_owner = ?,
    lease_token = ? || ':' || seq,
    lease = CASE WHEN typeof(lease) IN ('integer', 'real') AND lease > 0 AND lease <= ?
                 THEN lease ELSE ? END,
    lease_expires = ? + CASE WHEN typeof(lease) IN ('integer', 'real') AND lease > 0
                                  AND lease <= ? THEN lease ELSE ? END,
    started_at = ?
WHERE seq IN ({values})
RETURNING id, task, queue, payload, attempt, max_attempts, lost, lease_token, lease, timeout,
          enqueued_at, run_at, schedule, fire_time, retry

-- name: claimed_rows
-- The jobs of a committed claim (by its token), read again when the claim's
-- own reply was lost with its connection.
SELECT id, task, queue, payload, attempt, max_attempts, lost, lease_token, lease, timeout,
       enqueued_at, run_at, schedule, fire_time, retry FROM jobs
WHERE lease_token = ? || ':' || seq AND state = 'running' AND seq IN ({values})

-- name: advance_queue_clock
UPDATE queues SET vclock = max(vclock, ?) WHERE name = ?

-- name: extend_lease
UPDATE jobs SET lease_expires = ? + lease
WHERE id = ? AND lease_token = ? AND state = 'running'
RETURNING cancel_at

-- name: held_rows
-- host: the lease holder's host, as its heartbeat record gives it.
SELECT id, lease_token, state, queue, task, attempt, lost, max_attempts, max_lost, limits,
       unique_key, unique_for, lease_owner, cancel_at, cancel_by,
       (SELECT json_extract(info, '$.host') FROM workers WHERE workers.id = lease_owner)
FROM jobs WHERE id IN ({values})

-- name: mark_succeeded
UPDATE jobs SET state = 'succeeded', result = ?, finished_at = ?,
    history = json_insert(coalesce(history, '[]'), '$[#]', json(?)),
    lease_owner = NULL, lease_token = NULL, lease_expires = NULL
WHERE id = ?

-- name: mark_retry
UPDATE jobs SET state = 'scheduled', run_at = ?, error = ?, traceback = ?,
    history = json_insert(coalesce(history, '[]'), '$[#]', json(?)),
    lease_owner = NULL, lease_token = NULL, lease_expires = NULL
WHERE id = ?

-- name: mark_snoozed
-- A snooze is not an attempt: the claim's attempt is taken back.
UPDATE jobs SET state = 'scheduled', run_at = ?, error = ?, traceback = NULL,
    attempt = attempt - 1,
    lease_owner = NULL, lease_token = NULL, lease_expires = NULL
WHERE id = ?

-- name: mark_failed
UPDATE jobs SET state = 'failed', error = ?, traceback = ?, finished_at = ?,
    history = json_insert(coalesce(history, '[]'), '$[#]', json(?)),
    lease_owner = NULL, lease_token = NULL, lease_expires = NULL
WHERE id = ?

-- name: mark_cancelled
UPDATE jobs SET state = 'cancelled', finished_at = ?,
    history = json_insert(coalesce(history, '[]'), '$[#]', json(?)),
    lease_owner = NULL, lease_token = NULL, lease_expires = NULL
WHERE id = ?

-- name: cancel_pending
UPDATE jobs SET state = 'cancelled', finished_at = ?,
    history = json_insert(coalesce(history, '[]'), '$[#]', json(?))
WHERE id = ? AND state IN ('scheduled', 'queued', 'parked')
RETURNING unique_key

-- name: cancel_running
UPDATE jobs SET cancel_at = ?, cancel_by = ?
WHERE id = ? AND state = 'running' AND cancel_at IS NULL

-- name: mark_released
UPDATE jobs SET state = 'queued', attempt = attempt - 1, started_at = NULL,
    history = json_insert(coalesce(history, '[]'), '$[#]', json(?)),
    lease_owner = NULL, lease_token = NULL, lease_expires = NULL
WHERE id = ?

-- name: mark_lost
UPDATE jobs SET state = ?, lost = lost + 1, run_at = ?, error = ?, finished_at = ?,
    history = json_insert(coalesce(history, '[]'), '$[#]', json(?)),
    lease_owner = NULL, lease_token = NULL, lease_expires = NULL
WHERE id = ?

-- name: expired_leases
SELECT id, lease_token, state, queue, task, attempt, lost, max_attempts, max_lost, limits,
       unique_key, unique_for, lease_owner, cancel_at, cancel_by,
       (SELECT json_extract(info, '$.host') FROM workers WHERE workers.id = lease_owner)
FROM jobs INDEXED BY jobs_leases
WHERE state = 'running' AND lease_expires < ?
LIMIT 1000

-- name: release_unique
DELETE FROM uniques WHERE key = ? AND job_id = ?

-- name: keep_unique_until
UPDATE uniques SET until = ? WHERE key = ? AND job_id = ?

-- name: count_stats
INSERT INTO stats (minute, queue, task, succeeded, failed, retried) VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT (minute, queue, task) DO UPDATE SET
    succeeded = succeeded + excluded.succeeded, failed = failed + excluded.failed,
    retried = retried + excluded.retried

-- name: save_host_seen
-- A worker's host was seen on one of its queues (its heartbeat).
INSERT INTO hosts (host, queue, seen_at) VALUES (?, ?, ?)
ON CONFLICT (host, queue) DO UPDATE SET seen_at = max(seen_at, excluded.seen_at)

-- name: save_worker
INSERT INTO workers (id, heartbeat_at, info) VALUES (?, ?, ?)
ON CONFLICT (id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at, info = excluded.info

-- name: park
UPDATE jobs SET state = 'parked', parked_on = ?, parked_until = ? WHERE seq = ?

-- name: unpark_due
UPDATE jobs SET state = 'queued', parked_on = NULL, parked_until = NULL
WHERE state = 'parked' AND parked_until <= rota_now()

-- name: unpark_key
UPDATE jobs SET state = 'queued', parked_on = NULL, parked_until = NULL
WHERE seq IN (SELECT seq FROM jobs INDEXED BY jobs_parked_on
              WHERE state = 'parked' AND parked_on = ?
              ORDER BY priority DESC, vtime, seq LIMIT ?)

-- name: delete_worker
DELETE FROM workers WHERE id = ?

-- name: set_queue_mode
INSERT INTO queues (name, paused, debug) VALUES (?, ?, ?)
ON CONFLICT (name) DO UPDATE SET paused = excluded.paused, debug = excluded.debug,
    debug_job = CASE WHEN excluded.paused = 1 THEN debug_job END

-- name: debug_queues
SELECT name FROM queues WHERE debug = 1

-- name: debug_pause
UPDATE queues SET paused = 1, debug = 0, debug_job = ? WHERE name = ? AND debug = 1

-- name: queue_modes
SELECT name, paused, debug, debug_job FROM queues

-- name: lock_unique_key
-- Write transactions run one at a time on SQLite: nothing more to lock.
SELECT ?
