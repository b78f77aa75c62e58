-- Sessions, transactions, the store clock, wake-ups and migrations of the
-- MySQL / MariaDB store (rota.stores.mysql._conn, _tx). Each query follows a
-- "-- name: NAME" line; %s are parameters. A query of several statements (one
-- per line ending in ";") runs in one round trip: each statement takes the
-- last of the parameters, as many as it has, and the query gives the rows of
-- the last statement that returns rows.

-- name: session
-- Every connection: READ COMMITTED (no gap locks: claimers skip each other's
-- rows rather than wait); then store_settings.
SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED

-- name: read_only_session
-- A read replica's connections: the server refuses any change (1792).
SET SESSION TRANSACTION READ ONLY

-- name: begin
START TRANSACTION

-- name: commit
COMMIT

-- name: wake_and_commit
-- The wake-up counter is bumped last, so its row is locked only for the
-- commit, and idle workers see the new count once the work is committed.
UPDATE meta SET value = value + 1 WHERE `key` = 'wakeups';
COMMIT

-- name: rollback
ROLLBACK

-- name: clock
SELECT UNIX_TIMESTAMP(NOW(6))

-- name: wakeups
-- The count of wake-ups: the shared count, plus one row per committed send in
-- a caller's transaction not yet folded into it (see wake_at_commit).
SELECT (SELECT value FROM meta WHERE `key` = 'wakeups') + (SELECT COUNT(*) FROM wakes)

-- name: wait_state
-- What an idle worker reads before it waits: the clock, when the next delayed
-- and parked jobs are due, and the wake-up count.
SELECT UNIX_TIMESTAMP(NOW(6)),
       (SELECT MIN(run_at) FROM jobs WHERE state = 'scheduled'),
       (SELECT MIN(parked_until) FROM jobs WHERE state = 'parked'),
       (SELECT value FROM meta WHERE `key` = 'wakeups') + (SELECT COUNT(*) FROM wakes)

-- name: server
SELECT VERSION()

-- name: create_database
CREATE DATABASE IF NOT EXISTS `{database}` CHARACTER SET utf8mb4 COLLATE {collation}

-- name: migration_lock
-- A named lock of the server, one per database (its name fits the 64
-- characters a lock name may have); waits up to the seconds given.
SELECT GET_LOCK(CONCAT('rota-migrations-', LEFT(SHA1(DATABASE()), 32)), %s)

-- name: migration_unlock
SELECT RELEASE_LOCK(CONCAT('rota-migrations-', LEFT(SHA1(DATABASE()), 32)))

-- name: create_versions
CREATE TABLE IF NOT EXISTS schema_versions (
    version    INT NOT NULL PRIMARY KEY,
    applied_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)
) ENGINE=InnoDB

-- name: schema_version
SELECT COALESCE(MAX(version), 0) FROM schema_versions

-- name: record_version
INSERT INTO schema_versions (version) VALUES (%s)

-- name: wake_at_commit
-- In a caller's transaction that sent jobs: a row of its own, locked by no
-- other transaction, that wakes idle workers when the caller commits.
INSERT INTO wakes (id) VALUES (NULL)

-- name: committed_wakes
-- The rows of committed sends (a caller's transaction still open holds its
-- row locked: skipped), to fold into the shared count.
SELECT id FROM wakes ORDER BY id LIMIT %s FOR UPDATE SKIP LOCKED

-- name: drop_wake
-- One row by its key: a scan of the table would wait on an open send's row.
DELETE FROM wakes WHERE id = %s

-- name: add_wakes
-- Folding keeps the count idle workers see as it was.
UPDATE meta SET value = value + %s WHERE `key` = 'wakeups'

-- name: caller_session
-- A caller's connection, as it was before a send in its transaction.
SELECT DATABASE(), @@SESSION.sql_mode, @@SESSION.time_zone, @@autocommit

-- name: in_transaction
SELECT @@in_transaction

-- name: store_settings
-- Every connection, and a caller's for a send in its transaction (whose
-- isolation level stays the caller's): UTC for the clock, and strict checks
-- of every value.
SET SESSION time_zone = '+00:00',
    sql_mode = 'STRICT_TRANS_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION'

-- name: caller_settings
SET SESSION sql_mode = %s, time_zone = %s

-- name: use_database
USE `{database}`

-- name: savepoint
SAVEPOINT rota_send

-- name: rollback_to_savepoint
ROLLBACK TO SAVEPOINT rota_send

-- name: release_savepoint
RELEASE SAVEPOINT rota_send

-- name: replica_status
-- How this server replicates (no row: it does not); needs the REPLICATION
-- CLIENT right (SLAVE MONITOR on MariaDB 10.5.9+).
SHOW REPLICA STATUS
