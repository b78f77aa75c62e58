-- rota MySQL / MariaDB schema, version 1: the tables of the SQL engine, in the
-- store's own database. InnoDB tables; text compares byte for byte, without
-- ignoring trailing spaces ({collation}: utf8mb4_nopad_bin on MariaDB,
-- utf8mb4_0900_bin on MySQL), as on the other stores.
-- Times are DOUBLE seconds since the epoch, from the database's clock.
-- payload, result, limits, trigger, job_options and workers.info hold orjson
-- output as LONGBLOB; history is a JSON array as LONGTEXT, appended to in place.
-- Names (ids, tasks, queues, workers) are at most 255 characters, limit, unique
-- and fair keys at most 512: what InnoDB can index.
-- MySQL commits each DDL statement on its own: every statement here may run
-- again after a migration cut short, and then changes nothing.

CREATE TABLE IF NOT EXISTS jobs (
    seq           BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    id            VARCHAR(255) NOT NULL,
    task          VARCHAR(255) NOT NULL,
    queue         VARCHAR(255) NOT NULL,
    state         VARCHAR(16) NOT NULL,  -- scheduled|queued|parked|running|succeeded|failed|cancelled
    payload       LONGBLOB NOT NULL,
    priority      INT NOT NULL DEFAULT 0,
    -- priority order as an ascending index: MariaDB before 10.8 ignores DESC in an index
    rank_order    INT AS (-priority) STORED,
    vtime         DOUBLE NOT NULL DEFAULT 0,
    fair_key      VARCHAR(512) NOT NULL DEFAULT '',
    run_at        DOUBLE NOT NULL,
    enqueued_at   DOUBLE NOT NULL,
    started_at    DOUBLE,
    finished_at   DOUBLE,
    attempt       INT NOT NULL DEFAULT 0,
    max_attempts  INT NOT NULL DEFAULT 1,
    lost          INT NOT NULL DEFAULT 0,
    max_lost      INT NOT NULL DEFAULT 3,
    lease         DOUBLE NOT NULL DEFAULT 30,
    timeout       DOUBLE,
    lease_owner   VARCHAR(255),
    lease_token   VARCHAR(255),
    lease_expires DOUBLE,
    limits        LONGBLOB,
    unique_key    VARCHAR(512),
    unique_for    DOUBLE,
    schedule      VARCHAR(255),
    fire_time     DOUBLE,
    result        LONGBLOB,
    error         LONGTEXT,
    traceback     LONGTEXT,
    history       LONGTEXT,
    parked_on     VARCHAR(512),
    parked_until  DOUBLE,
    cancel_at     DOUBLE,
    cancel_by     TEXT,
    UNIQUE KEY jobs_id (id),
    KEY jobs_ready (state, queue, rank_order, vtime, seq),
    KEY jobs_due (state, run_at),
    KEY jobs_leases (state, lease_expires),
    KEY jobs_finished (finished_at),
    KEY jobs_queue_state (queue, state, seq),
    KEY jobs_state_seq (state, seq),
    KEY jobs_schedule_seq (schedule, seq),
    KEY jobs_parked_on (state, parked_on, rank_order, vtime, seq),
    KEY jobs_parked_until (state, parked_until)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={collation};

CREATE TABLE IF NOT EXISTS queues (
    name      VARCHAR(255) NOT NULL PRIMARY KEY,
    paused    INT NOT NULL DEFAULT 0,
    debug     INT NOT NULL DEFAULT 0,
    debug_job VARCHAR(255),
    vclock    DOUBLE NOT NULL DEFAULT 0
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={collation};

CREATE TABLE IF NOT EXISTS fair_keys (
    queue  VARCHAR(255) NOT NULL,
    `key`  VARCHAR(512) NOT NULL,
    `last` DOUBLE NOT NULL,
    PRIMARY KEY (queue, `key`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={collation};

CREATE TABLE IF NOT EXISTS limits (
    `key`       VARCHAR(512) NOT NULL PRIMARY KEY,
    running     INT NOT NULL DEFAULT 0,
    concurrency INT,
    override    INT,
    rate        DOUBLE,
    burst       INT,
    tokens      DOUBLE,
    tokens_at   DOUBLE,
    failures    INT NOT NULL DEFAULT 0,
    open_until  DOUBLE,
    probe       VARCHAR(255),
    inflight    INT NOT NULL DEFAULT 0
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={collation};

-- A row whose until has passed holds nothing (the lock on a key not yet held
-- is such a row: see lock_unique_key).
CREATE TABLE IF NOT EXISTS uniques (
    `key`   VARCHAR(512) NOT NULL PRIMARY KEY,
    job_id  VARCHAR(255) NOT NULL,
    `until` DOUBLE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={collation};

CREATE TABLE IF NOT EXISTS workers (
    id           VARCHAR(255) NOT NULL PRIMARY KEY,
    heartbeat_at DOUBLE NOT NULL,
    info         LONGBLOB NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={collation};

CREATE TABLE IF NOT EXISTS schedules (
    name        VARCHAR(255) NOT NULL PRIMARY KEY,
    task        VARCHAR(255) NOT NULL,
    `trigger`   LONGBLOB NOT NULL,
    payload     LONGBLOB NOT NULL,
    next_fire   DOUBLE,
    enabled     INT NOT NULL DEFAULT 1,
    misfire     VARCHAR(32) NOT NULL DEFAULT 'coalesce',
    grace       DOUBLE,
    overlap     VARCHAR(32) NOT NULL DEFAULT 'allow',
    jitter      DOUBLE NOT NULL DEFAULT 0,
    job_options LONGBLOB NOT NULL,
    last_fire   DOUBLE,
    last_job_id VARCHAR(255),
    skipped     INT NOT NULL DEFAULT 0
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={collation};

CREATE TABLE IF NOT EXISTS stats (
    minute    INT NOT NULL,
    queue     VARCHAR(255) NOT NULL,
    task      VARCHAR(255) NOT NULL,
    succeeded INT NOT NULL DEFAULT 0,
    failed    INT NOT NULL DEFAULT 0,
    retried   INT NOT NULL DEFAULT 0,
    PRIMARY KEY (minute, queue, task)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={collation};

-- schedules_version: bumped by every schedule change; wakeups: bumped by every
-- transaction that makes work claimable, and polled by idle workers.
CREATE TABLE IF NOT EXISTS meta (
    `key` VARCHAR(64) NOT NULL PRIMARY KEY,
    value BIGINT NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={collation};
INSERT INTO meta (`key`, value) VALUES ('schedules_version', 0), ('wakeups', 0)
ON DUPLICATE KEY UPDATE value = value;

CREATE TABLE IF NOT EXISTS audit (
    seq     BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    at      DOUBLE NOT NULL,
    actor   TEXT NOT NULL,
    role    TEXT NOT NULL,
    origin  TEXT NOT NULL,
    address TEXT,
    action  TEXT NOT NULL,
    target  TEXT NOT NULL,
    details LONGTEXT NOT NULL,
    KEY audit_at (at, seq)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={collation};

CREATE TABLE IF NOT EXISTS users (
    name          VARCHAR(255) NOT NULL PRIMARY KEY,
    role          VARCHAR(32) NOT NULL,
    password_hash TEXT NOT NULL,
    created_at    DOUBLE NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={collation};

CREATE TABLE IF NOT EXISTS user_tokens (
    token_hash VARCHAR(255) NOT NULL PRIMARY KEY,
    name       VARCHAR(255) NOT NULL,
    label      VARCHAR(255) NOT NULL,
    UNIQUE KEY user_tokens_label (name, label)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={collation};

CREATE TABLE IF NOT EXISTS job_logs (
    seq     BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    job_id  VARCHAR(255) NOT NULL,
    attempt INT NOT NULL,
    stream  VARCHAR(16) NOT NULL,
    at      DOUBLE NOT NULL,
    data    LONGTEXT NOT NULL,
    KEY job_logs_attempt (job_id, attempt, seq)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={collation};

-- A job's log chunks go with it (delete, purge, retention).
DROP TRIGGER IF EXISTS job_logs_gone;
CREATE TRIGGER job_logs_gone AFTER DELETE ON jobs
FOR EACH ROW DELETE FROM job_logs WHERE job_id = OLD.id;
