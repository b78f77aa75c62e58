-- rota PostgreSQL schema, version 1: the tables of the SQL engine, in the
-- store's own schema (the search path names it).
-- Times are double precision seconds since the epoch, from the database's
-- clock. payload, result, limits, trigger, job_options and workers.info hold
-- orjson output as bytea; history is jsonb, appended to in place.

CREATE TABLE jobs (
    seq           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id            text NOT NULL UNIQUE,
    task          text NOT NULL,
    queue         text NOT NULL,
    state         text NOT NULL,        -- scheduled|queued|parked|running|succeeded|failed|cancelled
    payload       bytea NOT NULL,
    priority      integer NOT NULL DEFAULT 0,
    vtime         double precision NOT NULL DEFAULT 0,
    fair_key      text NOT NULL DEFAULT '',
    run_at        double precision NOT NULL,
    enqueued_at   double precision NOT NULL,
    started_at    double precision,
    finished_at   double precision,
    attempt       integer NOT NULL DEFAULT 0,
    max_attempts  integer NOT NULL DEFAULT 1,
    lost          integer NOT NULL DEFAULT 0,
    max_lost      integer NOT NULL DEFAULT 3,
    lease         double precision NOT NULL DEFAULT 30,
    timeout       double precision,
    lease_owner   text,
    lease_token   text,
    lease_expires double precision,
    limits        bytea,
    unique_key    text,
    unique_for    double precision,
    schedule      text,
    fire_time     double precision,
    result        bytea,
    error         text,
    traceback     text,
    history       jsonb,
    parked_on     text,
    parked_until  double precision,
    cancel_at     double precision,
    cancel_by     text
);

CREATE INDEX jobs_ready ON jobs (queue, priority DESC, vtime, seq) WHERE state = 'queued';
CREATE INDEX jobs_due ON jobs (run_at) WHERE state = 'scheduled';
CREATE INDEX jobs_leases ON jobs (lease_expires) WHERE state = 'running';
CREATE INDEX jobs_finished ON jobs (finished_at) WHERE finished_at IS NOT NULL;
CREATE INDEX jobs_queue_state ON jobs (queue, state, seq);
CREATE INDEX jobs_state_seq ON jobs (state, seq);
CREATE INDEX jobs_schedule_seq ON jobs (schedule, seq) WHERE schedule IS NOT NULL;
CREATE INDEX jobs_parked_on ON jobs (parked_on, priority DESC, vtime, seq) WHERE state = 'parked';
CREATE INDEX jobs_parked_until ON jobs (parked_until) WHERE state = 'parked';

CREATE TABLE queues (
    name      text PRIMARY KEY,
    paused    integer NOT NULL DEFAULT 0,
    debug     integer NOT NULL DEFAULT 0,
    debug_job text,
    vclock    double precision NOT NULL DEFAULT 0
);

CREATE TABLE fair_keys (
    queue text NOT NULL,
    key   text NOT NULL,
    last  double precision NOT NULL,
    PRIMARY KEY (queue, key)
);

CREATE TABLE limits (
    key         text PRIMARY KEY,
    running     integer NOT NULL DEFAULT 0,
    concurrency integer,
    override    integer,
    rate        double precision,
    burst       integer,
    tokens      double precision,
    tokens_at   double precision,
    failures    integer NOT NULL DEFAULT 0,
    open_until  double precision,
    probe       text,
    inflight    integer NOT NULL DEFAULT 0
);

CREATE TABLE uniques (
    key    text PRIMARY KEY,
    job_id text NOT NULL,
    until  double precision
);

CREATE TABLE workers (
    id           text PRIMARY KEY,
    heartbeat_at double precision NOT NULL,
    info         bytea NOT NULL
);

CREATE TABLE schedules (
    name        text PRIMARY KEY,
    task        text NOT NULL,
    trigger     bytea NOT NULL,
    payload     bytea NOT NULL,
    next_fire   double precision,
    enabled     integer NOT NULL DEFAULT 1,
    misfire     text NOT NULL DEFAULT 'coalesce',
    grace       double precision,
    overlap     text NOT NULL DEFAULT 'allow',
    jitter      double precision NOT NULL DEFAULT 0,
    job_options bytea NOT NULL,
    last_fire   double precision,
    last_job_id text,
    skipped     integer NOT NULL DEFAULT 0
);

CREATE TABLE stats (
    minute    integer NOT NULL,
    queue     text NOT NULL,
    task      text NOT NULL,
    succeeded integer NOT NULL DEFAULT 0,
    failed    integer NOT NULL DEFAULT 0,
    retried   integer NOT NULL DEFAULT 0,
    PRIMARY KEY (minute, queue, task)
);

CREATE TABLE meta (
    key   text PRIMARY KEY,
    value bigint NOT NULL
);
INSERT INTO meta (key, value) VALUES ('schedules_version', 0);

CREATE TABLE audit (
    seq     bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at      double precision NOT NULL,
    actor   text NOT NULL,
    role    text NOT NULL,
    origin  text NOT NULL,
    address text,
    action  text NOT NULL,
    target  text NOT NULL,
    details text NOT NULL
);
CREATE INDEX audit_at ON audit (at, seq);

CREATE TABLE users (
    name          text PRIMARY KEY,
    role          text NOT NULL,
    password_hash text NOT NULL,
    created_at    double precision NOT NULL
);
CREATE TABLE user_tokens (
    token_hash text PRIMARY KEY,
    name       text NOT NULL,
    label      text NOT NULL,
    UNIQUE (name, label)
);

CREATE TABLE job_logs (
    seq     bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    job_id  text NOT NULL,
    attempt integer NOT NULL,
    stream  text NOT NULL,
    at      double precision NOT NULL,
    data    text NOT NULL
);
CREATE INDEX job_logs_attempt ON job_logs (job_id, attempt, seq);

CREATE FUNCTION job_logs_gone() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM job_logs WHERE job_id = OLD.id;
    RETURN NULL;
END $$;
CREATE TRIGGER job_logs_gone AFTER DELETE ON jobs
FOR EACH ROW EXECUTE FUNCTION job_logs_gone();
