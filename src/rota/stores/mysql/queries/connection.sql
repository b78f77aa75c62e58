-- Sessions, transactions, the store clock, wake-ups and migrations of the
-- MySQL / MariaDB store (rota.stores.mysql._conn). Each query follows a
-- "-- name: NAME" line; %s are parameters. A query of several statements (one
-- per line ending in ";") runs in one round trip: each statement takes the
-- last of the parameters, as many as it has, and the query gives the rows of
-- the last statement that returns rows.

-- name: session
-- Every connection: READ COMMITTED (no gap locks: claimers skip each other's
-- rows rather than wait), UTC for the clock, and strict checks of every value.
SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED;
SET time_zone = '+00:00',
    sql_mode = 'STRICT_TRANS_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION'

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
SELECT value FROM meta WHERE `key` = 'wakeups'

-- name: wait_state
-- What an idle worker reads before it waits: the clock, when the next delayed
-- and parked jobs are due, and the wake-up count.
SELECT UNIX_TIMESTAMP(NOW(6)),
       (SELECT MIN(run_at) FROM jobs WHERE state = 'scheduled'),
       (SELECT MIN(parked_until) FROM jobs WHERE state = 'parked'),
       (SELECT value FROM meta WHERE `key` = 'wakeups')

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
