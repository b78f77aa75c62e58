-- rota SQLite schema, version 2: parking of blocked jobs.
-- A job a claim finds blocked by a limit is parked: state 'parked' (shown to
-- users as queued), out of the ready index until its key may let it run:
-- parked_until passes (a rate token refills, a breaker cools), or a finish
-- frees a slot of parked_on.

ALTER TABLE jobs ADD COLUMN parked_on TEXT;
ALTER TABLE jobs ADD COLUMN parked_until REAL;
CREATE INDEX jobs_parked_on ON jobs (parked_on, priority DESC, vtime, seq) WHERE state = 'parked';
CREATE INDEX jobs_parked_until ON jobs (parked_until) WHERE state = 'parked';
