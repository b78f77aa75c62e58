-- Jobs sent to a host (NewJob.host), and when each host's workers were last
-- seen on each queue (written by their heartbeats, read by claims).
ALTER TABLE jobs ADD COLUMN host TEXT;

CREATE TABLE hosts (
    host    TEXT NOT NULL,
    queue   TEXT NOT NULL,
    seen_at REAL NOT NULL,
    PRIMARY KEY (host, queue)
) WITHOUT ROWID;
