-- The jobs of one queue in insertion order, for listing a queue newest first
-- (list_jobs with the queue filter alone, or with the task, schedule, text or
-- queued filters). Without it the planner walks the primary key backwards and
-- filters, which reads every newer job of other queues when the queue's own
-- are old (about 190 ms for a queue of 17,000 jobs under 400,000 newer ones).
-- Built in the migration transaction, which holds writes to jobs meanwhile
-- (about 0.5 s per 500,000 jobs); on a large table, build it beforehand
-- without that lock and this finds it:
--   CREATE INDEX CONCURRENTLY jobs_queue_seq ON rota.jobs (queue, seq);
CREATE INDEX IF NOT EXISTS jobs_queue_seq ON jobs (queue, seq);
