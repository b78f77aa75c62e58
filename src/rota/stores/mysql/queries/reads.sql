-- Inspection in the SQL engine on MySQL / MariaDB (rota.stores.sql.reads).
-- Each query follows a "-- name: NAME" line; {values} takes a list of %s,
-- {where} the named filter fragments joined by AND.

-- name: jobs_by_id
SELECT seq, id, task, queue, state, payload, priority, run_at, enqueued_at, attempt,
       max_attempts, lost, started_at, finished_at, lease_owner, lease_expires, result,
       error, traceback, history, limits, unique_key, schedule, fire_time, host, retry
FROM jobs WHERE id IN ({values})

-- name: list_jobs
SELECT seq, id, task, queue, state, payload, priority, run_at, enqueued_at, attempt,
       max_attempts, lost, started_at, finished_at, lease_owner, lease_expires, result,
       error, traceback, history, limits, unique_key, schedule, fire_time, host, retry
FROM jobs WHERE {where}
ORDER BY seq DESC LIMIT %s

-- name: no_filter
TRUE

-- name: of_queue
queue = %s

-- name: of_task
task = %s

-- name: is_queued_by
state IN ('queued', 'parked', 'scheduled') AND (state <> 'scheduled' OR run_at <= %s)

-- name: is_scheduled_after
state = 'scheduled' AND run_at > %s

-- name: in_state
state = %s

-- name: of_schedule
schedule = %s

-- name: payload_has
LOCATE(%s, payload) > 0

-- name: before_seq
seq < %s

-- name: ids_from
SELECT id FROM jobs WHERE id >= %s AND LEFT(id, %s) = %s ORDER BY id LIMIT %s

-- name: ids_between
SELECT id FROM jobs WHERE id >= %s AND id < %s AND LEFT(id, %s) = %s ORDER BY id LIMIT %s

-- name: count_by_state
SELECT queue, state, COUNT(*) FROM jobs GROUP BY queue, state

-- name: due_by_queue
SELECT queue, COUNT(*) FROM jobs
WHERE state = 'scheduled' AND run_at <= %s GROUP BY queue

-- name: stats_since
SELECT minute, queue, task, succeeded, failed, retried FROM stats
WHERE minute >= %s AND minute > 0 ORDER BY minute

-- name: stats_totals
SELECT minute, queue, task, succeeded, failed, retried FROM stats WHERE minute = 0

-- name: worker_infos
SELECT info FROM workers ORDER BY heartbeat_at DESC

-- name: limit_infos
SELECT `key`, running, COALESCE(override, concurrency), rate, burst, tokens, tokens_at,
       failures, open_until, override, rate_override
FROM limits ORDER BY `key`

-- name: next_due
SELECT MIN(run_at) FROM jobs WHERE state = 'scheduled'

-- name: next_parked
SELECT MIN(parked_until) FROM jobs WHERE state = 'parked'
