-- Wake-ups from jobs sent in a caller's own transaction (MySQLStore.enqueue_in):
-- a row each, inserted in that transaction, so that its commit wakes idle
-- workers without the caller's transaction holding the shared count in `meta`
-- until it ends. Idle workers look at the count plus these rows; the next
-- such send and the retention pass fold committed rows into the count.
CREATE TABLE IF NOT EXISTS wakes (
    id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={collation};
