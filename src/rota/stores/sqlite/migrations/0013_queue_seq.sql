-- The jobs of one queue in insertion order, for listing a queue newest first
-- (list_jobs with the queue filter alone, or with the task, schedule, text or
-- queued filters): the page reads the queue's newest entries and stops, where
-- jobs_queue_state (queue, state, seq) made it sort every job of the queue.
-- Built in the migration's exclusive transaction: about 1.2 s per 500,000
-- jobs, once, with writers waiting.
CREATE INDEX jobs_queue_seq ON jobs (queue, seq);
