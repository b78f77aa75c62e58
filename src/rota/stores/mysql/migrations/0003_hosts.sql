-- Jobs sent to a host (NewJob.host), and when each host's workers were last
-- seen on each queue (written by their heartbeats, read by claims).
ALTER TABLE jobs ADD COLUMN host VARCHAR(255) NULL;

CREATE TABLE IF NOT EXISTS hosts (
    host    VARCHAR(255) NOT NULL,
    queue   VARCHAR(255) NOT NULL,
    seen_at DOUBLE NOT NULL,
    PRIMARY KEY (host, queue)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={collation};
