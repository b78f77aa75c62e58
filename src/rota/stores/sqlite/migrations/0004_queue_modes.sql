-- rota SQLite schema, version 4: queue modes.
-- A queue's mode is running, paused (paused = 1) or debug (debug = 1): a
-- debug queue pauses itself at its first failed attempt, in the transaction
-- that records it, and names that job in debug_job until it is resumed.

ALTER TABLE queues ADD COLUMN debug INTEGER NOT NULL DEFAULT 0;
ALTER TABLE queues ADD COLUMN debug_job TEXT;
