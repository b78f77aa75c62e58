-- rota SQLite schema, version 6: breaker admission.
-- A closed breaker admits at claim time only as many jobs as it has failures
-- left (threshold - failures), counting the jobs with its key in flight.

ALTER TABLE limits ADD COLUMN inflight INTEGER NOT NULL DEFAULT 0;
