-- rota SQLite schema, version 8: job logs, what each attempt of a job wrote.
-- A job's chunks go with it (delete, purge, retention) through the trigger.

CREATE TABLE job_logs (
    seq     INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id  TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    stream  TEXT NOT NULL,
    at      REAL NOT NULL,
    data    TEXT NOT NULL
);
CREATE INDEX job_logs_attempt ON job_logs (job_id, attempt, seq);
CREATE TRIGGER job_logs_gone AFTER DELETE ON jobs
BEGIN DELETE FROM job_logs WHERE job_id = OLD.id; END;
