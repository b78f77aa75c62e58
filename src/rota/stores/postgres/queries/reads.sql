-- Inspection in the SQL engine on PostgreSQL (rota.stores.sql.reads).
-- Each query follows a "-- name: NAME" line; {values} is one array parameter,
-- {where} the named filter fragments joined by AND.

-- name: jobs_by_id
SELECT seq, id, task, queue, state, payload, priority, run_at, enqueued_at, attempt,
       max_attempts, lost, started_at, finished_at, lease_owner, lease_expires, result,
       error, traceback, history::text, limits, unique_key, schedule, fire_time, host, retry
FROM jobs WHERE id = ANY({values})

-- name: list_jobs
SELECT seq, id, task, queue, state, payload, priority, run_at, enqueued_at, attempt,
       max_attempts, lost, started_at, finished_at, lease_owner, lease_expires, result,
       error, traceback, history::text, limits, unique_key, schedule, fire_time, host, retry
FROM jobs WHERE {where}
ORDER BY seq DESC LIMIT %s

-- name: list_queue
-- A page of one queue's jobs (rota.stores.sql.reads._queue_page). The queue is
-- a range of one value and the order is by queue, then seq: no equality lets
-- the planner drop the queue from the order, so only an index led by the
-- queue gives it without sorting the queue; with `queue = ...` and the order
-- by seq, statistics that spread a queue of a few per cent over the table
-- made it walk the primary key backwards past every newer job (85-163 ms
-- past 483,000).
SELECT seq, id, task, queue, state, payload, priority, run_at, enqueued_at, attempt,
       max_attempts, lost, started_at, finished_at, lease_owner, lease_expires, result,
       error, traceback, history::text, limits, unique_key, schedule, fire_time, host, retry
FROM jobs, (SELECT %s::text AS listed_queue) AS given
WHERE queue >= given.listed_queue AND queue <= given.listed_queue AND {where}
ORDER BY queue DESC, seq DESC LIMIT %s

-- name: list_queue_state
-- A page of one queue's jobs in one state. Here the state is the range of one
-- value and the order is by state, then seq: only jobs_queue_state gives it
-- for one queue (the queue's equality drops it from the order), reading the
-- pair's entries newest first; the queue as a range instead would have the
-- scan read every entry of the queue for a state it does not hold.
SELECT seq, id, task, queue, state, payload, priority, run_at, enqueued_at, attempt,
       max_attempts, lost, started_at, finished_at, lease_owner, lease_expires, result,
       error, traceback, history::text, limits, unique_key, schedule, fire_time, host, retry
FROM jobs, (SELECT %s::text AS listed_queue, %s::text AS listed_state) AS given
WHERE queue = given.listed_queue
  AND state >= given.listed_state AND state <= given.listed_state AND {where}
ORDER BY state DESC, seq DESC LIMIT %s

-- name: list_queue_queued
-- A page of one queue's queued jobs: the newest queued, parked and due
-- scheduled ones, each read as list_queue_state reads a state, merged.
(SELECT seq, id, task, queue, state, payload, priority, run_at, enqueued_at, attempt,
       max_attempts, lost, started_at, finished_at, lease_owner, lease_expires, result,
       error, traceback, history::text, limits, unique_key, schedule, fire_time, host, retry
 FROM jobs WHERE queue = %s AND state >= 'queued' AND state <= 'queued' AND {where}
 ORDER BY state DESC, seq DESC LIMIT %s)
UNION ALL
(SELECT seq, id, task, queue, state, payload, priority, run_at, enqueued_at, attempt,
       max_attempts, lost, started_at, finished_at, lease_owner, lease_expires, result,
       error, traceback, history::text, limits, unique_key, schedule, fire_time, host, retry
 FROM jobs WHERE queue = %s AND state >= 'parked' AND state <= 'parked' AND {where}
 ORDER BY state DESC, seq DESC LIMIT %s)
UNION ALL
(SELECT seq, id, task, queue, state, payload, priority, run_at, enqueued_at, attempt,
       max_attempts, lost, started_at, finished_at, lease_owner, lease_expires, result,
       error, traceback, history::text, limits, unique_key, schedule, fire_time, host, retry
 FROM jobs WHERE queue = %s AND state >= 'scheduled' AND state <= 'scheduled' AND {where} AND run_at <= %s
 ORDER BY state DESC, seq DESC LIMIT %s)
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
position(%s::bytea IN payload) > 0

-- name: runs_after
run_at > %s

-- name: before_seq
seq < %s

-- name: ids_from
SELECT id FROM jobs WHERE id >= %s AND left(id, %s) = %s ORDER BY id LIMIT %s

-- name: ids_between
SELECT id FROM jobs WHERE id >= %s AND id < %s AND left(id, %s) = %s ORDER BY id LIMIT %s

-- name: count_by_state
SELECT queue, state, count(*) FROM jobs GROUP BY queue, state

-- name: due_by_queue
SELECT queue, count(*) FROM jobs
WHERE state = 'scheduled' AND run_at <= %s GROUP BY queue

-- name: stats_since
SELECT minute, queue, task, succeeded, failed, retried FROM stats
WHERE minute >= %s AND minute > 0 ORDER BY minute

-- name: stats_totals
SELECT minute, queue, task, succeeded, failed, retried FROM stats WHERE minute = 0

-- name: worker_infos
SELECT info FROM workers ORDER BY heartbeat_at DESC

-- name: limit_infos
SELECT key, running, coalesce(override, concurrency), rate, burst, tokens, tokens_at, failures,
       open_until, override, rate_override
FROM limits ORDER BY key

-- name: next_due
SELECT min(run_at) FROM jobs WHERE state = 'scheduled'

-- name: next_parked
SELECT min(parked_until) FROM jobs WHERE state = 'parked'
