-- The job verbs of the SQL engine on MySQL / MariaDB (rota.stores.sql.jobs,
-- limits, uniques, modes). Each query follows a "-- name: NAME" line; %s are
-- parameters, and {values} (in IN-list queries) takes a list of %s.
-- Neither database has UPDATE ... RETURNING: a change whose rows the engine
-- reads is two statements in one round trip (see connection.sql), a locking
-- SELECT then the change, or the change then a SELECT of the rows it changed.
-- Claims lock the rows they take with SKIP LOCKED; every other row a verb
-- changes is locked by the change itself, in a stable order, so concurrent
-- verbs wait for each other rather than lose an update.
-- A reused id fails insert_job (and the transaction).

-- name: insert_job
INSERT INTO jobs (id, task, queue, state, payload, priority, vtime, fair_key, run_at,
                  enqueued_at, max_attempts, max_lost, lease, timeout, limits,
                  unique_key, unique_for, schedule, fire_time, host, retry)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)

-- name: job_exists
SELECT 1 FROM jobs WHERE id = %s

-- name: ensure_queue
-- IGNORE: an existing row is left as it is, share-locked rather than locked
-- for writing, so enqueues to one queue do not wait for each other. (A name
-- too long for the column is refused by the job's own insert.)
INSERT IGNORE INTO queues (name) VALUES (%s)

-- name: queue_clock
SELECT vclock FROM queues WHERE name = %s

-- name: fair_key_last
SELECT `last` FROM fair_keys WHERE queue = %s AND `key` = %s

-- name: set_fair_key_last
INSERT INTO fair_keys (queue, `key`, `last`) VALUES (%s, %s, %s)
ON DUPLICATE KEY UPDATE `last` = VALUES(`last`)

-- name: unique_holder
SELECT u.job_id, u.`until`, j.state
FROM uniques u LEFT JOIN jobs j ON j.id = u.job_id
WHERE u.`key` = %s

-- name: hold_unique
INSERT INTO uniques (`key`, job_id, `until`) VALUES (%s, %s, NULL)
ON DUPLICATE KEY UPDATE job_id = VALUES(job_id), `until` = NULL

-- name: lock_unique_key
-- Locks the key's row to the end of the transaction, creating it if the key
-- was never held (a row whose until has passed holds nothing), so one enqueue
-- at a time decides who holds a key.
INSERT INTO uniques (`key`, job_id, `until`) VALUES (%s, '', 0)
ON DUPLICATE KEY UPDATE `key` = `key`

-- name: promote_due
-- Reads the store clock itself (run before the claim reads it: never later).
UPDATE jobs SET state = 'queued' WHERE state = 'scheduled' AND run_at <= UNIX_TIMESTAMP(NOW(6))

-- name: ready_candidates
-- Nothing from a paused queue; a job sent to a host only for a claim of that
-- host, or once the host's workers on the queue are gone for the grace
-- (rota.models.HostScope). The ready index is forced: it reads the queue's
-- jobs in claim order, and SKIP LOCKED skips the rows it meets. A plan that
-- intersects two other indexes (MariaDB picks one once most jobs are
-- finished or scheduled) waits on a job a caller's open transaction inserted,
-- SKIP LOCKED notwithstanding, and holds up every claim until it commits.
SELECT seq, priority, vtime, limits, id FROM jobs FORCE INDEX (jobs_ready)
WHERE state = 'queued' AND queue = %s
  AND queue NOT IN (SELECT name FROM queues WHERE paused = 1)
  AND (host IS NULL OR host = %s
       OR COALESCE((SELECT seen_at FROM hosts h WHERE h.host = jobs.host AND h.queue = jobs.queue),
                   enqueued_at) < UNIX_TIMESTAMP(NOW(6)) - %s)
ORDER BY rank_order, vtime, seq
LIMIT %s OFFSET %s
FOR UPDATE SKIP LOCKED

-- name: limit_row
-- Creates the key's row if it has none and locks it either way, so two claims
-- never both start from an absent row.
INSERT INTO limits (`key`) VALUES (%s) ON DUPLICATE KEY UPDATE `key` = `key`;
SELECT running, concurrency, override, rate, burst, tokens, tokens_at, failures,
       open_until, probe, inflight, rate_override
FROM limits WHERE `key` = %s

-- name: save_limit_row
INSERT INTO limits (`key`, running, concurrency, override, rate, burst, tokens, tokens_at,
                    failures, open_until, probe, inflight)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
ON DUPLICATE KEY UPDATE
    running = VALUES(running), concurrency = VALUES(concurrency),
    override = VALUES(override), rate = VALUES(rate), burst = VALUES(burst),
    tokens = VALUES(tokens), tokens_at = VALUES(tokens_at),
    failures = VALUES(failures), open_until = VALUES(open_until), probe = VALUES(probe),
    inflight = VALUES(inflight)

-- name: claim_rows
-- A lease that is not a sane duration is taken as the fallback lease (the two
-- parameters after the token), and stored. The rows are read back by seq.
UPDATE jobs SET state = 'running', attempt = attempt + 1, lease_owner = %s,
    lease_token = CONCAT(%s, ':', seq),
    lease = CASE WHEN lease > 0 AND lease <= %s THEN lease ELSE %s END,
    lease_expires = %s + CASE WHEN lease > 0 AND lease <= %s THEN lease ELSE %s END,
    started_at = %s
WHERE seq IN ({values});
SELECT id, task, queue, payload, attempt, max_attempts, lost, lease_token, lease, timeout,
       enqueued_at, run_at, schedule, fire_time, retry
FROM jobs WHERE seq IN ({values})

-- name: claimed_rows
-- The jobs of a committed claim (by its token), read again when the claim's
-- own reply was lost with its connection.
SELECT id, task, queue, payload, attempt, max_attempts, lost, lease_token, lease, timeout,
       enqueued_at, run_at, schedule, fire_time, retry FROM jobs
WHERE lease_token = CONCAT(%s, ':', seq) AND state = 'running' AND seq IN ({values})

-- name: advance_queue_clock
UPDATE queues SET vclock = GREATEST(vclock, %s) WHERE name = %s

-- name: extend_lease
UPDATE jobs SET lease_expires = %s + lease
WHERE id = %s AND lease_token = %s AND state = 'running';
SELECT cancel_at FROM jobs WHERE id = %s AND lease_token = %s AND state = 'running'

-- name: held_rows
-- host: the lease holder's host, as its heartbeat record gives it.
SELECT id, lease_token, state, queue, task, attempt, lost, max_attempts, max_lost, limits,
       unique_key, unique_for, lease_owner, cancel_at, cancel_by,
       (SELECT JSON_UNQUOTE(JSON_EXTRACT(CONVERT(info USING utf8mb4), '$.host')) FROM workers
        WHERE workers.id = jobs.lease_owner)
FROM jobs WHERE id IN ({values})
ORDER BY id
FOR UPDATE

-- name: mark_succeeded
UPDATE jobs SET state = 'succeeded', result = %s, finished_at = %s,
    history = JSON_ARRAY_APPEND(COALESCE(history, '[]'), '$',
                                JSON_EXTRACT(CONVERT(%s USING utf8mb4), '$')),
    lease_owner = NULL, lease_token = NULL, lease_expires = NULL
WHERE id = %s

-- name: mark_retry
UPDATE jobs SET state = 'scheduled', run_at = %s, error = %s, traceback = %s,
    history = JSON_ARRAY_APPEND(COALESCE(history, '[]'), '$',
                                JSON_EXTRACT(CONVERT(%s USING utf8mb4), '$')),
    lease_owner = NULL, lease_token = NULL, lease_expires = NULL
WHERE id = %s

-- name: mark_snoozed
-- A snooze is not an attempt: the claim's attempt is taken back.
UPDATE jobs SET state = 'scheduled', run_at = %s, error = %s, traceback = NULL,
    attempt = attempt - 1,
    lease_owner = NULL, lease_token = NULL, lease_expires = NULL
WHERE id = %s

-- name: mark_failed
UPDATE jobs SET state = 'failed', error = %s, traceback = %s, finished_at = %s,
    history = JSON_ARRAY_APPEND(COALESCE(history, '[]'), '$',
                                JSON_EXTRACT(CONVERT(%s USING utf8mb4), '$')),
    lease_owner = NULL, lease_token = NULL, lease_expires = NULL
WHERE id = %s

-- name: mark_cancelled
UPDATE jobs SET state = 'cancelled', finished_at = %s,
    history = JSON_ARRAY_APPEND(COALESCE(history, '[]'), '$',
                                JSON_EXTRACT(CONVERT(%s USING utf8mb4), '$')),
    lease_owner = NULL, lease_token = NULL, lease_expires = NULL
WHERE id = %s

-- name: cancel_pending
SELECT unique_key FROM jobs
WHERE id = %s AND state IN ('scheduled', 'queued', 'parked') FOR UPDATE;
UPDATE jobs SET state = 'cancelled', finished_at = %s,
    history = JSON_ARRAY_APPEND(COALESCE(history, '[]'), '$',
                                JSON_EXTRACT(CONVERT(%s USING utf8mb4), '$'))
WHERE id = %s AND state IN ('scheduled', 'queued', 'parked')

-- name: cancel_running
UPDATE jobs SET cancel_at = %s, cancel_by = %s
WHERE id = %s AND state = 'running' AND cancel_at IS NULL

-- name: mark_released
UPDATE jobs SET state = 'queued', attempt = attempt - 1, started_at = NULL,
    history = JSON_ARRAY_APPEND(COALESCE(history, '[]'), '$',
                                JSON_EXTRACT(CONVERT(%s USING utf8mb4), '$')),
    lease_owner = NULL, lease_token = NULL, lease_expires = NULL
WHERE id = %s

-- name: mark_lost
UPDATE jobs SET state = %s, lost = lost + 1, run_at = %s, error = %s, finished_at = %s,
    history = JSON_ARRAY_APPEND(COALESCE(history, '[]'), '$',
                                JSON_EXTRACT(CONVERT(%s USING utf8mb4), '$')),
    lease_owner = NULL, lease_token = NULL, lease_expires = NULL
WHERE id = %s

-- name: expired_leases
SELECT id, lease_token, state, queue, task, attempt, lost, max_attempts, max_lost, limits,
       unique_key, unique_for, lease_owner, cancel_at, cancel_by,
       (SELECT JSON_UNQUOTE(JSON_EXTRACT(CONVERT(info USING utf8mb4), '$.host')) FROM workers
        WHERE workers.id = jobs.lease_owner)
FROM jobs
WHERE state = 'running' AND lease_expires < %s
ORDER BY lease_expires
LIMIT 1000
FOR UPDATE SKIP LOCKED

-- name: release_unique
DELETE FROM uniques WHERE `key` = %s AND job_id = %s

-- name: keep_unique_until
UPDATE uniques SET `until` = %s WHERE `key` = %s AND job_id = %s

-- name: count_stats
INSERT INTO stats (minute, queue, task, succeeded, failed, retried)
VALUES (%s, %s, %s, %s, %s, %s)
ON DUPLICATE KEY UPDATE
    succeeded = succeeded + VALUES(succeeded), failed = failed + VALUES(failed),
    retried = retried + VALUES(retried)

-- name: save_host_seen
-- A worker's host was seen on one of its queues (its heartbeat).
INSERT INTO hosts (host, queue, seen_at) VALUES (%s, %s, %s)
ON DUPLICATE KEY UPDATE seen_at = GREATEST(seen_at, VALUES(seen_at))

-- name: save_worker
INSERT INTO workers (id, heartbeat_at, info) VALUES (%s, %s, %s)
ON DUPLICATE KEY UPDATE heartbeat_at = VALUES(heartbeat_at), info = VALUES(info)

-- name: park
UPDATE jobs SET state = 'parked', parked_on = %s, parked_until = %s WHERE seq = %s

-- name: unpark_due
UPDATE jobs SET state = 'queued', parked_on = NULL, parked_until = NULL
WHERE state = 'parked' AND parked_until <= UNIX_TIMESTAMP(NOW(6))

-- name: unpark_key
UPDATE jobs SET state = 'queued', parked_on = NULL, parked_until = NULL
WHERE state = 'parked' AND parked_on = %s
ORDER BY rank_order, vtime, seq
LIMIT %s

-- name: delete_worker
DELETE FROM workers WHERE id = %s

-- name: set_queue_mode
-- The debug job is kept only by a pause (assignments run left to right: it
-- reads the new paused flag).
INSERT INTO queues (name, paused, debug) VALUES (%s, %s, %s)
ON DUPLICATE KEY UPDATE paused = VALUES(paused), debug = VALUES(debug),
    debug_job = CASE WHEN paused = 1 THEN debug_job END

-- name: lock_debug_queue
-- A claim on a queue in debug mode waits for a failure that is pausing it
-- (and a failure waits for the claim): see hold_debug_queue. An UPDATE that
-- changes nothing rather than a locking read: at READ COMMITTED, InnoDB
-- matches a row another transaction holds against its last committed
-- version, so a claim on a queue not in debug mode neither locks its row nor
-- waits for the claims holding it (they update its clock); a debug queue's
-- row is locked exclusively, as the claim may update it later (two share
-- locks would deadlock there).
UPDATE queues SET debug = debug WHERE name = %s AND debug = 1

-- name: hold_debug_queue
-- A failure in a queue in debug mode, or paused by its first failure there,
-- locks its row before it reads the clock it records the failure at, so
-- failures and claims there are in clock order (a failure that waited for
-- the one pausing the queue finds the row paused, with its debug_job). Locked
-- as lock_debug_queue locks, then read: the row when it is so.
UPDATE queues SET debug = debug WHERE name = %s AND (debug = 1 OR debug_job IS NOT NULL);
SELECT name FROM queues WHERE name = %s AND (debug = 1 OR debug_job IS NOT NULL)

-- name: debug_queues
SELECT name FROM queues WHERE debug = 1

-- name: debug_pause
UPDATE queues SET paused = 1, debug = 0, debug_job = %s WHERE name = %s AND debug = 1

-- name: queue_modes
SELECT name, paused, debug, debug_job FROM queues
