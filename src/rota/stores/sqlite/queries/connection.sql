-- Connection set-up, transactions and migrations of the SQLite store
-- (rota.stores.sqlite._conn). Each statement follows a "-- name: NAME" line;
-- {level} and {version} are filled from checked values.

-- name: use_wal
PRAGMA journal_mode = WAL

-- name: limit_wal_size
PRAGMA journal_size_limit = {size}

-- name: page_count
PRAGMA page_count

-- name: incremental_auto_vacuum
PRAGMA auto_vacuum = INCREMENTAL

-- name: auto_vacuum
PRAGMA auto_vacuum

-- name: free_pages
PRAGMA freelist_count

-- name: give_back_pages
BEGIN IMMEDIATE;
PRAGMA incremental_vacuum({pages});
COMMIT

-- name: set_synchronous
PRAGMA synchronous = {level}

-- name: set_busy_timeout
PRAGMA busy_timeout = 60000

-- name: no_foreign_keys
PRAGMA foreign_keys = OFF

-- name: begin_write
BEGIN IMMEDIATE

-- name: begin_exclusive
BEGIN EXCLUSIVE

-- name: commit
COMMIT

-- name: rollback
ROLLBACK

-- name: schema_version
PRAGMA user_version

-- name: set_schema_version
PRAGMA user_version = {version}

-- name: data_version
PRAGMA data_version
