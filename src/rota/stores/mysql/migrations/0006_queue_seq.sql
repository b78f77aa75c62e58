-- The jobs of one queue in insertion order, for listing a queue newest first
-- (query list_queue names it: MariaDB's planner, left to itself, walked the
-- primary key backwards past every newer job of other queues).
-- Built in place without a lock on the table's rows (ALGORITHM=INPLACE,
-- LOCK=NONE): sends, claims and finishes go on meanwhile; the build waits
-- for transactions already open on jobs to end, and took 0.8 s for 500,000
-- jobs on MariaDB 10.11.
ALTER TABLE jobs ADD INDEX jobs_queue_seq (queue, seq), ALGORITHM=INPLACE, LOCK=NONE;
