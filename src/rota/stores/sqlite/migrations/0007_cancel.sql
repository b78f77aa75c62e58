-- rota SQLite schema, version 7: cancelling running jobs.
-- A running job asked to stop keeps running until its worker learns of it
-- (the lease extension's reply) and reports; who asked and when are kept
-- here, and its finish then ends it cancelled.

ALTER TABLE jobs ADD COLUMN cancel_at REAL;
ALTER TABLE jobs ADD COLUMN cancel_by TEXT
