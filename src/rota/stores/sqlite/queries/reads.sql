-- Inspection in the SQL engine on SQLite (rota.stores.sql.reads).
-- Each query follows a "-- name: NAME" line; {values} takes a list of ? marks,
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
ORDER BY seq DESC LIMIT ?

-- name: no_filter
1 = 1

-- name: of_queue
queue = ?

-- name: of_task
task = ?

-- name: is_queued_by
state IN ('queued', 'parked', 'scheduled') AND (state != 'scheduled' OR run_at <= ?)

-- name: is_scheduled_after
state = 'scheduled' AND run_at > ?

-- name: in_state
state = ?

-- name: of_schedule
schedule = ?

-- name: payload_has
instr(payload, ?) > 0

-- name: before_seq
seq < ?

-- name: ids_from
SELECT id FROM jobs WHERE id >= ? AND substr(id, 1, ?) = ? ORDER BY id LIMIT ?

-- name: ids_between
SELECT id FROM jobs WHERE id >= ? AND id < ? AND substr(id, 1, ?) = ? ORDER BY id LIMIT ?

-- name: count_by_state
SELECT queue, state, count(*) FROM jobs GROUP BY queue, state

-- name: due_by_queue
SELECT queue, count(*) FROM jobs INDEXED BY jobs_due
WHERE state = 'scheduled' AND run_at <= ? GROUP BY queue

-- name: stats_since
SELECT minute, queue, task, succeeded, failed, retried FROM stats
WHERE minute >= ? AND minute > 0 ORDER BY minute

-- name: stats_totals
SELECT minute, queue, task, succeeded, failed, retried FROM stats WHERE minute = 0

-- name: worker_infos
SELECT info FROM workers ORDER BY heartbeat_at DESC

-- name: limit_infos
SELECT key, running, coalesce(override, concurrency), rate, burst, tokens, tokens_at, failures,
       open_until, override, rate_override
FROM limits ORDER BY key

-- name: next_due
SELECT min(run_at) FROM jobs INDEXED BY jobs_due WHERE state = 'scheduled'

-- name: next_parked
SELECT min(parked_until) FROM jobs WHERE state = 'parked'
