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

-- name: list_queue
-- A page of one queue's jobs (rota.stores.sql.reads._queue_page): the queue's
-- entries of jobs_queue_seq, newest first. Left to itself, MariaDB walked the
-- primary key backwards when it expected the queue's jobs among the newest
-- (0.4-1.2 s past 483,000 newer jobs for a queue of 17,000 old ones).
SELECT seq, id, task, queue, state, payload, priority, run_at, enqueued_at, attempt,
       max_attempts, lost, started_at, finished_at, lease_owner, lease_expires, result,
       error, traceback, history, limits, unique_key, schedule, fire_time, host, retry
FROM jobs FORCE INDEX (jobs_queue_seq) WHERE queue = %s AND {where}
ORDER BY seq DESC LIMIT %s

-- name: list_queue_state
-- A page of one queue's jobs in one state: its entries of jobs_queue_state,
-- newest first (left to itself, MariaDB walked the primary key, or sorted an
-- intersection with jobs_state_seq whole: 0.3-1.3 s).
SELECT seq, id, task, queue, state, payload, priority, run_at, enqueued_at, attempt,
       max_attempts, lost, started_at, finished_at, lease_owner, lease_expires, result,
       error, traceback, history, limits, unique_key, schedule, fire_time, host, retry
FROM jobs FORCE INDEX (jobs_queue_state) WHERE queue = %s AND state = %s AND {where}
ORDER BY seq DESC LIMIT %s

-- name: list_queue_queued
-- A page of one queue's queued jobs: the newest queued, parked and due
-- scheduled ones, each from jobs_queue_state, merged.
(SELECT seq, id, task, queue, state, payload, priority, run_at, enqueued_at, attempt,
       max_attempts, lost, started_at, finished_at, lease_owner, lease_expires, result,
       error, traceback, history, limits, unique_key, schedule, fire_time, host, retry
 FROM jobs FORCE INDEX (jobs_queue_state) WHERE queue = %s AND state = 'queued' AND {where}
 ORDER BY seq DESC LIMIT %s)
UNION ALL
(SELECT seq, id, task, queue, state, payload, priority, run_at, enqueued_at, attempt,
       max_attempts, lost, started_at, finished_at, lease_owner, lease_expires, result,
       error, traceback, history, limits, unique_key, schedule, fire_time, host, retry
 FROM jobs FORCE INDEX (jobs_queue_state) WHERE queue = %s AND state = 'parked' AND {where}
 ORDER BY seq DESC LIMIT %s)
UNION ALL
(SELECT seq, id, task, queue, state, payload, priority, run_at, enqueued_at, attempt,
       max_attempts, lost, started_at, finished_at, lease_owner, lease_expires, result,
       error, traceback, history, limits, unique_key, schedule, fire_time, host, retry
 FROM jobs FORCE INDEX (jobs_queue_state) WHERE queue = %s AND state = 'scheduled' AND {where}
   AND run_at <= %s
 ORDER BY seq DESC LIMIT %s)
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

-- name: runs_after
run_at > %s

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
