-- rota SQLite schema, version 1.
-- Times are REAL seconds since the epoch. JSON columns hold orjson output.

CREATE TABLE jobs (
    seq           INTEGER PRIMARY KEY,          -- insertion order; newest-first paging
    id            TEXT NOT NULL UNIQUE,
    task          TEXT NOT NULL,
    queue         TEXT NOT NULL,
    state         TEXT NOT NULL,                -- scheduled|queued|running|succeeded|failed|cancelled
    payload       BLOB NOT NULL,                -- {"args": [...], "kwargs": {...}}
    priority      INTEGER NOT NULL DEFAULT 0,
    vtime         REAL NOT NULL DEFAULT 0,      -- fair-queuing virtual start time
    fair_key      TEXT NOT NULL DEFAULT '',
    run_at        REAL NOT NULL,
    enqueued_at   REAL NOT NULL,
    started_at    REAL,
    finished_at   REAL,
    attempt       INTEGER NOT NULL DEFAULT 0,
    max_attempts  INTEGER NOT NULL DEFAULT 1,
    lost          INTEGER NOT NULL DEFAULT 0,
    max_lost      INTEGER NOT NULL DEFAULT 3,
    lease         REAL NOT NULL DEFAULT 30,
    timeout       REAL,
    lease_owner   TEXT,
    lease_token   TEXT,
    lease_expires REAL,
    limits        BLOB,                         -- {"c": [[key, n]], "r": [[key, rate, burst]], "b": [[key, n, cooldown]]}
    unique_key    TEXT,
    unique_for    REAL,
    schedule      TEXT,
    fire_time     REAL,
    result        BLOB,
    error         TEXT,
    traceback     TEXT,
    history       BLOB                          -- JSON list of failed and lost attempts
);

CREATE INDEX jobs_ready ON jobs (queue, priority DESC, vtime, seq) WHERE state = 'queued';
CREATE INDEX jobs_due ON jobs (run_at) WHERE state = 'scheduled';
CREATE INDEX jobs_leases ON jobs (lease_expires) WHERE state = 'running';
CREATE INDEX jobs_finished ON jobs (finished_at) WHERE finished_at IS NOT NULL;
CREATE INDEX jobs_queue_state ON jobs (queue, state, seq);
CREATE INDEX jobs_state_seq ON jobs (state, seq);
CREATE INDEX jobs_schedule_seq ON jobs (schedule, seq) WHERE schedule IS NOT NULL;

CREATE TABLE queues (
    name    TEXT PRIMARY KEY,
    paused  INTEGER NOT NULL DEFAULT 0,
    vclock  REAL NOT NULL DEFAULT 0                -- virtual time of the last claimed job
);

CREATE TABLE fair_keys (
    queue   TEXT NOT NULL,
    key     TEXT NOT NULL,
    last    REAL NOT NULL,                         -- virtual time of the key's newest job
    PRIMARY KEY (queue, key)
) WITHOUT ROWID;

CREATE TABLE limits (
    key         TEXT PRIMARY KEY,
    running     INTEGER NOT NULL DEFAULT 0,
    concurrency INTEGER,                           -- the limit jobs last declared
    override    INTEGER,                           -- set at run time; wins over declared
    rate        REAL,
    burst       INTEGER,
    tokens      REAL,
    tokens_at   REAL,
    failures    INTEGER NOT NULL DEFAULT 0,
    open_until  REAL,
    probe       TEXT                               -- job id of the half-open probe
) WITHOUT ROWID;

CREATE TABLE uniques (
    key     TEXT PRIMARY KEY,
    job_id  TEXT NOT NULL,
    until   REAL                                   -- NULL: held while the job is active
) WITHOUT ROWID;

CREATE TABLE workers (
    id            TEXT PRIMARY KEY,
    heartbeat_at  REAL NOT NULL,
    info          BLOB NOT NULL
) WITHOUT ROWID;

CREATE TABLE schedules (
    name         TEXT PRIMARY KEY,
    task         TEXT NOT NULL,
    trigger      BLOB NOT NULL,
    payload      BLOB NOT NULL,
    next_fire    REAL,
    enabled      INTEGER NOT NULL DEFAULT 1,
    misfire      TEXT NOT NULL DEFAULT 'coalesce',
    grace        REAL,
    overlap      TEXT NOT NULL DEFAULT 'allow',
    jitter       REAL NOT NULL DEFAULT 0,
    job_options  BLOB NOT NULL,
    last_fire    REAL,
    last_job_id  TEXT,
    skipped      INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;

CREATE TABLE stats (
    minute     INTEGER NOT NULL,                   -- 0 holds the all-time totals
    queue      TEXT NOT NULL,
    task       TEXT NOT NULL,
    succeeded  INTEGER NOT NULL DEFAULT 0,
    failed     INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (minute, queue, task)
) WITHOUT ROWID;

CREATE TABLE meta (
    key    TEXT PRIMARY KEY,
    value  INTEGER NOT NULL
) WITHOUT ROWID;

INSERT INTO meta (key, value) VALUES ('schedules_version', 0);
