-- The job verbs of the SQL engine on PostgreSQL (rota.stores.sql.jobs, limits, uniques,
-- modes). Each query follows a "-- name: NAME" line; %s are parameters, and {values}
-- (in IN-list queries) is one array parameter.
-- A query NAME_columns is NAME for many rows in one statement, one array
-- parameter per column (the dialect uses it for a batch).
-- Claims lock the rows they take with SKIP LOCKED; every other row a verb
-- changes is locked by the change itself, in a stable order, so concurrent
-- verbs wait for each other rather than lose an update.

-- name: insert_job
-- A reused id fails the insert (and the transaction).
INSERT INTO jobs (id, task, queue, state, payload, priority, vtime, fair_key, run_at,
                  enqueued_at, max_attempts, max_lost, lease, timeout, limits,
                  unique_key, unique_for, schedule, fire_time, host, retry)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)

-- name: insert_job_columns
-- insert_job for many rows in one statement: one array per column.
INSERT INTO jobs (id, task, queue, state, payload, priority, vtime, fair_key, run_at,
                  enqueued_at, max_attempts, max_lost, lease, timeout, limits,
                  unique_key, unique_for, schedule, fire_time, host, retry)
SELECT * FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[], %s::bytea[],
                     %s::integer[], %s::double precision[], %s::text[],
                     %s::double precision[], %s::double precision[], %s::integer[],
                     %s::integer[], %s::double precision[], %s::double precision[],
                     %s::bytea[], %s::text[], %s::double precision[], %s::text[],
                     %s::double precision[], %s::text[], %s::text[])

-- name: job_exists
SELECT 1 FROM jobs WHERE id = %s

-- name: ensure_queue
INSERT INTO queues (name) VALUES (%s) ON CONFLICT DO NOTHING

-- name: queue_clock
SELECT vclock FROM queues WHERE name = %s

-- name: fair_key_last
SELECT last FROM fair_keys WHERE queue = %s AND key = %s

-- name: set_fair_key_last
INSERT INTO fair_keys (queue, key, last) VALUES (%s, %s, %s)
ON CONFLICT (queue, key) DO UPDATE SET last = excluded.last

-- name: unique_holder
SELECT u.job_id, u.until, j.state
FROM uniques u LEFT JOIN jobs j ON j.id = u.job_id
WHERE u.key = %s

-- name: hold_unique
INSERT INTO uniques (key, job_id, until) VALUES (%s, %s, NULL)
ON CONFLICT (key) DO UPDATE SET job_id = excluded.job_id, until = NULL

-- name: promote_due
-- Reads the transaction's clock itself (set by transaction_id).
UPDATE jobs SET state = 'queued'
WHERE seq IN (SELECT seq FROM jobs
              WHERE state = 'scheduled' AND run_at <= current_setting('rota.now')::double precision
              ORDER BY run_at FOR UPDATE SKIP LOCKED)

-- name: ready_candidates
-- Nothing from a paused queue; a job sent to a host only for a claim of that
-- host, or once the host's workers on the queue are gone for the grace
-- (rota.models.HostScope).
SELECT seq, priority, vtime, limits, id FROM jobs
WHERE state = 'queued' AND queue = %s
  AND queue NOT IN (SELECT name FROM queues WHERE paused = 1)
  AND (host IS NULL OR host = %s
       OR COALESCE((SELECT seen_at FROM hosts h WHERE h.host = jobs.host AND h.queue = jobs.queue),
                   enqueued_at) < current_setting('rota.now')::double precision - %s)
ORDER BY priority DESC, vtime, seq
LIMIT %s OFFSET %s
FOR UPDATE SKIP LOCKED

-- name: limit_row
-- Creates the key's row if it has none and locks it either way (a no-op
-- update), so two claims never both start from an absent row.
INSERT INTO limits AS l (key) VALUES (%s)
ON CONFLICT (key) DO UPDATE SET key = l.key
RETURNING running, concurrency, override, rate, burst, tokens, tokens_at, failures,
          open_until, probe, inflight, rate_override

-- name: save_limit_row
INSERT INTO limits (key, running, concurrency, override, rate, burst, tokens, tokens_at,
                    failures, open_until, probe, inflight)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
ON CONFLICT (key) DO UPDATE SET
    running = excluded.running, concurrency = excluded.concurrency,
    override = excluded.override, rate = excluded.rate, burst = excluded.burst,
    tokens = excluded.tokens, tokens_at = excluded.tokens_at,
    failures = excluded.failures, open_until = excluded.open_until, probe = excluded.probe,
    inflight = excluded.inflight

-- name: claim_rows
-- A lease that is not a sane duration is taken as the fallback lease (the two
-- parameters after the token), and stored.
UPDATE jobs SET state = 'running', attempt = attempt + 1, lease_owner = %s,
    lease_token = %s || ':' || seq,
    lease = CASE WHEN lease > 0 AND lease <= %s THEN lease ELSE %s END,
    lease_expires = %s + CASE WHEN lease > 0 AND lease <= %s THEN lease ELSE %s END,
    started_at = %s
WHERE seq = ANY({values})
RETURNING id, task, queue, payload, attempt, max_attempts, lost, lease_token, lease, timeout,
          enqueued_at, run_at, schedule, fire_time, retry

-- name: claimed_rows
-- The jobs of a committed claim (by its token), read again when the claim's
-- own reply was lost with its connection.
SELECT id, task, queue, payload, attempt, max_attempts, lost, lease_token, lease, timeout,
       enqueued_at, run_at, schedule, fire_time, retry FROM jobs
WHERE lease_token = %s || ':' || seq AND state = 'running' AND seq = ANY({values})

-- name: advance_queue_clock
UPDATE queues SET vclock = greatest(vclock, %s) WHERE name = %s

-- name: extend_lease
UPDATE jobs SET lease_expires = %s + lease
WHERE id = %s AND lease_token = %s AND state = 'running'
RETURNING cancel_at

-- name: held_rows
-- host: the lease holder's host, as its heartbeat record gives it.
SELECT id, lease_token, state, queue, task, attempt, lost, max_attempts, max_lost, limits,
       unique_key, unique_for, lease_owner, cancel_at, cancel_by,
       (SELECT convert_from(info, 'UTF8')::jsonb ->> 'host' FROM workers
        WHERE workers.id = jobs.lease_owner)
FROM jobs WHERE id = ANY({values})
ORDER BY id
FOR UPDATE

-- name: mark_succeeded
UPDATE jobs SET state = 'succeeded', result = %s, finished_at = %s,
    history = coalesce(history, '[]'::jsonb) || jsonb_build_array(convert_from(%s, 'UTF8')::jsonb),
    lease_owner = NULL, lease_token = NULL, lease_expires = NULL
WHERE id = %s

-- name: mark_succeeded_columns
-- mark_succeeded for many jobs in one statement: one array per column.
UPDATE jobs SET state = 'succeeded', result = u.result, finished_at = u.finished_at,
    history = coalesce(history, '[]'::jsonb) || jsonb_build_array(convert_from(u.entry, 'UTF8')::jsonb),
    lease_owner = NULL, lease_token = NULL, lease_expires = NULL
FROM unnest(%s::bytea[], %s::double precision[], %s::bytea[], %s::text[])
     AS u(result, finished_at, entry, id)
WHERE jobs.id = u.id

-- name: mark_retry
UPDATE jobs SET state = 'scheduled', run_at = %s, error = %s, traceback = %s,
    history = coalesce(history, '[]'::jsonb) || jsonb_build_array(convert_from(%s, 'UTF8')::jsonb),
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
    history = coalesce(history, '[]'::jsonb) || jsonb_build_array(convert_from(%s, 'UTF8')::jsonb),
    lease_owner = NULL, lease_token = NULL, lease_expires = NULL
WHERE id = %s

-- name: mark_cancelled
UPDATE jobs SET state = 'cancelled', finished_at = %s,
    history = coalesce(history, '[]'::jsonb) || jsonb_build_array(convert_from(%s, 'UTF8')::jsonb),
    lease_owner = NULL, lease_token = NULL, lease_expires = NULL
WHERE id = %s

-- name: cancel_pending
UPDATE jobs SET state = 'cancelled', finished_at = %s,
    history = coalesce(history, '[]'::jsonb) || jsonb_build_array(convert_from(%s, 'UTF8')::jsonb)
WHERE id = %s AND state IN ('scheduled', 'queued', 'parked')
RETURNING unique_key

-- name: cancel_running
UPDATE jobs SET cancel_at = %s, cancel_by = %s
WHERE id = %s AND state = 'running' AND cancel_at IS NULL

-- name: mark_released
UPDATE jobs SET state = 'queued', attempt = attempt - 1, started_at = NULL,
    history = coalesce(history, '[]'::jsonb) || jsonb_build_array(convert_from(%s, 'UTF8')::jsonb),
    lease_owner = NULL, lease_token = NULL, lease_expires = NULL
WHERE id = %s

-- name: mark_lost
UPDATE jobs SET state = %s, lost = lost + 1, run_at = %s, error = %s, finished_at = %s,
    history = coalesce(history, '[]'::jsonb) || jsonb_build_array(convert_from(%s, 'UTF8')::jsonb),
    lease_owner = NULL, lease_token = NULL, lease_expires = NULL
WHERE id = %s

-- name: expired_leases
SELECT id, lease_token, state, queue, task, attempt, lost, max_attempts, max_lost, limits,
       unique_key, unique_for, lease_owner, cancel_at, cancel_by,
       (SELECT convert_from(info, 'UTF8')::jsonb ->> 'host' FROM workers
        WHERE workers.id = jobs.lease_owner)
FROM jobs
WHERE state = 'running' AND lease_expires < %s
ORDER BY lease_expires
LIMIT 1000
FOR UPDATE SKIP LOCKED

-- name: release_unique
DELETE FROM uniques WHERE key = %s AND job_id = %s

-- name: keep_unique_until
UPDATE uniques SET until = %s WHERE key = %s AND job_id = %s

-- name: count_stats
INSERT INTO stats AS s (minute, queue, task, succeeded, failed, retried)
VALUES (%s, %s, %s, %s, %s, %s)
ON CONFLICT (minute, queue, task) DO UPDATE SET
    succeeded = s.succeeded + excluded.succeeded, failed = s.failed + excluded.failed,
    retried = s.retried + excluded.retried

-- name: save_host_seen
-- A worker's host was seen on one of its queues (its heartbeat).
INSERT INTO hosts AS h (host, queue, seen_at) VALUES (%s, %s, %s)
ON CONFLICT (host, queue) DO UPDATE SET seen_at = greatest(h.seen_at, excluded.seen_at)

-- name: save_worker
INSERT INTO workers (id, heartbeat_at, info) VALUES (%s, %s, %s)
ON CONFLICT (id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at, info = excluded.info

-- name: park
UPDATE jobs SET state = 'parked', parked_on = %s, parked_until = %s WHERE seq = %s

-- name: unpark_due
UPDATE jobs SET state = 'queued', parked_on = NULL, parked_until = NULL
WHERE seq IN (SELECT seq FROM jobs
              WHERE state = 'parked'
                AND parked_until <= current_setting('rota.now')::double precision
              ORDER BY parked_until FOR UPDATE SKIP LOCKED)

-- name: unpark_key
UPDATE jobs SET state = 'queued', parked_on = NULL, parked_until = NULL
WHERE seq IN (SELECT seq FROM jobs
              WHERE state = 'parked' AND parked_on = %s
              ORDER BY priority DESC, vtime, seq LIMIT %s
              FOR UPDATE SKIP LOCKED)

-- name: delete_worker
DELETE FROM workers WHERE id = %s

-- name: set_queue_mode
INSERT INTO queues AS q (name, paused, debug) VALUES (%s, %s, %s)
ON CONFLICT (name) DO UPDATE SET paused = excluded.paused, debug = excluded.debug,
    debug_job = CASE WHEN excluded.paused = 1 THEN q.debug_job END

-- name: lock_debug_queue
-- A claim on a queue in debug mode waits for a failure that is pausing it
-- (and a failure waits for the claim): see hold_debug_queue. Exclusive, as
-- the claim may update the row (its clock) later: two share locks would
-- deadlock there.
SELECT name FROM queues WHERE name = %s AND debug = 1
FOR UPDATE

-- name: hold_debug_queue
-- A failure in a queue in debug mode, or paused by its first failure there,
-- locks its row before it reads the clock it records the failure at, so
-- failures and claims there are in clock order (a failure that waited for
-- the one pausing the queue finds the row paused, with its debug_job).
SELECT name FROM queues WHERE name = %s AND (debug = 1 OR debug_job IS NOT NULL)
FOR UPDATE

-- name: debug_queues
SELECT name FROM queues WHERE debug = 1

-- name: debug_pause
UPDATE queues SET paused = 1, debug = 0, debug_job = %s WHERE name = %s AND debug = 1

-- name: queue_modes
SELECT name, paused, debug, debug_job FROM queues

-- name: lock_unique_key
-- Held to the end of the transaction: one enqueue at a time decides who holds a key.
SELECT pg_advisory_xact_lock(hashtext('rota unique key'), hashtext(%s))
