-- Connection set-up, the store clock, wake-ups and migrations of the
-- PostgreSQL store (rota.stores.postgres._conn, _tx). Each statement follows a
-- "-- name: NAME" line; {schema} and {channel} are checked identifiers.

-- name: clock
SELECT extract(epoch FROM clock_timestamp())::double precision

-- name: clock_again
-- The store clock read again in a write transaction (after the locks it
-- took), kept as its setting rota.now as transaction_id keeps the first.
SELECT set_config('rota.now', extract(epoch FROM clock_timestamp())::text, true)::double precision

-- name: migration_lock
SELECT pg_advisory_xact_lock(hashtext('rota migrations'), hashtext(%s))

-- name: schema_state
-- Whether the schema exists, and whether it has rota's schema_versions table:
-- read from the catalog, which every role may read (a plain SELECT on the
-- table fails when the schema is missing, or when the role may not use it).
SELECT EXISTS (SELECT FROM pg_namespace WHERE nspname = %(schema)s),
       EXISTS (SELECT FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
               WHERE n.nspname = %(schema)s AND c.relname = 'schema_versions'),
       current_user

-- name: create_schema
CREATE SCHEMA IF NOT EXISTS {schema}

-- name: create_versions
CREATE TABLE IF NOT EXISTS {schema}.schema_versions (
    version    integer PRIMARY KEY,
    applied_at timestamptz NOT NULL DEFAULT now()
)

-- name: schema_version
SELECT coalesce(max(version), 0) FROM {schema}.schema_versions

-- name: record_version
INSERT INTO {schema}.schema_versions (version) VALUES (%s)

-- name: search_path
SELECT current_setting('search_path')

-- name: set_local_search_path
SELECT set_config('search_path', %s, true)

-- name: caller_rights
-- Whether a caller's role may use rota's schema (the schema named, if it exists).
SELECT current_user, coalesce(
    (SELECT has_schema_privilege(oid, 'USAGE') FROM pg_namespace WHERE nspname = %s), false)

-- name: begin
-- Sent in the pipeline with the transaction's first statements.
BEGIN

-- name: commit
COMMIT

-- name: rollback
ROLLBACK

-- name: notify
SELECT pg_notify(%s, '')

-- name: listen
LISTEN {channel}

-- name: transaction_id
-- Sent first in a write transaction: its id and its server's start time (to
-- settle a commit cut off by a lost connection), and the store clock, also
-- kept as the transaction's setting rota.now for the queries that read it.
SELECT pg_current_xact_id()::text, pg_postmaster_start_time(),
       set_config('rota.now', extract(epoch FROM clock_timestamp())::text, true)
           ::double precision

-- name: transaction_status
SELECT pg_xact_status(%s::xid8), pg_postmaster_start_time()

-- name: server_started
SELECT pg_postmaster_start_time()

-- name: replication_lag
-- On a streaming replica: how many seconds its replay trails the primary,
-- 0 once it has replayed all it received; NULL on a primary.
SELECT CASE
    WHEN NOT pg_is_in_recovery() THEN NULL
    WHEN pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0
    ELSE EXTRACT(EPOCH FROM now() - pg_last_xact_replay_timestamp())
END
