-- Failed attempts after which the job was scheduled again, apart from the
-- failed attempts as a whole (which keep counting them).
ALTER TABLE stats ADD COLUMN retried INTEGER NOT NULL DEFAULT 0;
