-- Jobs sent to a host (NewJob.host), and when each host's workers were last
-- seen on each queue (written by their heartbeats, read by claims).
ALTER TABLE jobs ADD COLUMN host text;

CREATE TABLE hosts (
    host    text NOT NULL,
    queue   text NOT NULL,
    seen_at double precision NOT NULL,
    PRIMARY KEY (host, queue)
);
