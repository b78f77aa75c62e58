"""Read replicas on a real PostgreSQL streaming replica (``pg_basebackup -R``).

Reads for display (``app.reader``, the dashboard and its API, ``rota jobs
list``) come from the replica; every change goes to the primary. The proof
that a read came from the replica is a job the primary has and the replica
does not: replay on the replica is paused (``pg_wal_replay_pause()``) while
the job is sent.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from starlette.testclient import TestClient

from helpers import wait_for
from pg_cluster import PgCluster, pg_cluster
from rota import App, every
from rota.errors import InvalidArgument, StoreError
from rota.models import JobQuery, JobState
from rota.stores import Store, redact_url

pytest.importorskip("psycopg")

__all__ = ["pg_cluster"]  # fixture

ROTA = str(Path(sys.executable).with_name("rota"))
SCHEMA = "replicated"


class Pair:
    """A primary server and its streaming replica."""

    def __init__(self, primary: PgCluster, replica: PgCluster) -> None:
        self.primary = primary
        self.replica = replica
        #: The store URL; the read URL names no schema and gets this one.
        self.url = f"{primary.url()}?schema={SCHEMA}"
        self.read_url = replica.url()

    def caught_up(self) -> None:
        """Return once the replica has replayed everything the primary wrote so far."""
        lsn = self.primary.psql("SELECT pg_current_wal_insert_lsn()")
        check = f"SELECT pg_last_wal_replay_lsn() >= '{lsn}'::pg_lsn"
        wait_for(lambda: self.replica.psql(check) == "t", 30, 0.05, f"replay up to {lsn}")

    def pause_replay(self) -> None:
        """Stop the replica replaying what the primary writes from now on."""
        self.caught_up()
        self.replica.psql("SELECT pg_wal_replay_pause()")
        state = "SELECT pg_get_wal_replay_pause_state()"
        wait_for(lambda: self.replica.psql(state) == "paused", 30, 0.05, "replay to pause")

    def resume_replay(self) -> None:
        self.replica.psql("SELECT pg_wal_replay_resume()")


@pytest.fixture
def pair(pg_cluster: PgCluster) -> Pair:
    return Pair(pg_cluster, pg_cluster.replica())


@pytest.fixture
def app(pair: Pair) -> Iterator[App]:
    """An app on the primary that reads from the replica, its schema replicated."""
    made = App(pair.url, read_url=pair.read_url)

    @made.task(name="fetch")
    def fetch(page: str) -> str:
        return page

    made.store.queues()  # migrated on the primary...
    pair.caught_up()  # ...and the schema is on the replica
    yield made
    made.close()


def listed(store: Store) -> set[str]:
    return {job.id for job in store.list_jobs(JobQuery(), limit=1000).jobs}


def rota_jobs_list(*args: str, env: dict[str, str] | None = None) -> str:
    """The output of ``rota jobs list ARGS``; it must succeed."""
    done = subprocess.run(
        [ROTA, "jobs", "list", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={k: v for k, v in os.environ.items() if not k.startswith("ROTA_")} | (env or {}),
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_jobs_sent_to_the_primary_show_up_through_the_reader(app: App, pair: Pair) -> None:
    reader = app.reader
    assert reader is not app.store
    assert getattr(reader, "replica", False)
    assert getattr(reader, "schema", None) == SCHEMA  # from the store URL
    ids = {app.tasks["fetch"].send(f"page-{i}").id for i in range(5)}

    wait_for(lambda: listed(reader) == ids, 30, 0.05, "the jobs on the replica")
    job = reader.get_job(next(iter(ids)))
    assert job is not None and job.state is JobState.QUEUED
    assert app.reader is reader  # opened once
    app.close()
    assert app.reader is not reader  # closed with the app, opened again on use
    assert listed(app.reader) == ids


def test_the_read_url_comes_from_the_store_url_then_the_environment(
    app: App, pair: Pair, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent = app.tasks["fetch"].send("page").id
    pair.caught_up()
    nowhere = "postgresql://postgres@127.0.0.1:1/nowhere"
    monkeypatch.setenv("ROTA_READ_URL", nowhere)
    in_url = App(f"{pair.url}&read_url={quote(pair.read_url, safe='')}")
    try:
        assert in_url.read_url == pair.read_url  # the URL's option beats the environment
        assert listed(in_url.reader) == {sent}
        assert getattr(in_url.reader, "replica", False)
        assert in_url.store.get_job(sent) is not None  # read_url never reached libpq
    finally:
        in_url.close()
    monkeypatch.setenv("ROTA_READ_URL", pair.read_url)
    from_env = App(pair.url)
    try:
        assert listed(from_env.reader) == {sent}
        assert getattr(from_env.reader, "replica", False)
    finally:
        from_env.close()


def test_the_dashboard_reads_from_the_replica_and_acts_on_the_primary(app: App, pair: Pair) -> None:
    from rota.web import create_app

    client = TestClient(
        create_app(app),
        base_url="http://localhost",
        follow_redirects=False,
        client=("127.0.0.1", 50000),
    )

    def api_jobs() -> dict[str, str]:
        answer = client.get("/api/jobs", params={"limit": 100})
        assert answer.status_code == 200, answer.text
        return {job["id"]: job["state"] for job in answer.json()["jobs"]}

    with client:
        before = app.tasks["fetch"].send("before").id
        wait_for(lambda: before in api_jobs(), 30, 0.05, "the first job on the replica")
        pair.pause_replay()
        try:
            late = app.tasks["fetch"].send("late").id
            assert app.store.get_job(late) is not None
            assert set(api_jobs()) == {before}  # the replica has not replayed it
            assert client.get(f"/api/jobs/{late}").status_code == 404
            metrics = client.get("/metrics").text
            assert 'rota_jobs{queue="default",state="queued"} 1.0' in metrics

            # An action still reaches the primary, which has the job.
            assert client.post(f"/api/jobs/{late}/cancel").status_code == 200
            cancelled = app.store.get_job(late)
            assert cancelled is not None and cancelled.state is JobState.CANCELLED
            assert set(api_jobs()) == {before}
        finally:
            pair.resume_replay()
        wait_for(lambda: api_jobs().get(late) == "cancelled", 30, 0.05, "replay of the cancel")
        assert api_jobs()[before] == "queued"
        assert f"pages read from {redact_url(pair.read_url)}" in client.get("/").text


def test_rota_jobs_list_reads_from_the_replica(app: App, pair: Pair) -> None:
    before = app.tasks["fetch"].send("before").id
    pair.pause_replay()
    try:
        late = app.tasks["fetch"].send("late").id
        from_option = rota_jobs_list("--url", pair.url, "--read-url", pair.read_url)
        from_env = rota_jobs_list("--url", pair.url, env={"ROTA_READ_URL": pair.read_url})
        primary = rota_jobs_list("--url", pair.url)
    finally:
        pair.resume_replay()
    for shown in (from_option, from_env):
        assert before in shown
        assert late not in shown
    assert before in primary and late in primary


def test_rota_schedules_list_and_show_read_from_the_replica(app: App, pair: Pair) -> None:
    app.schedule("before", "fetch", every(3600), args=("a",))
    pair.caught_up()
    pair.pause_replay()
    try:
        app.schedule("late", "fetch", every(3600), args=("b",))
        replica = ("--url", pair.url, "--read-url", pair.read_url)
        listed = rota("schedules", "list", *replica)
        shown = rota("schedules", "show", "before", *replica)
        missing = rota("schedules", "show", "late", *replica, check=False)
        primary = rota("schedules", "list", "--url", pair.url)
    finally:
        pair.resume_replay()
    assert "before" in listed and "late" not in listed
    assert shown.startswith("name ") and "before" in shown
    assert "no schedule named 'late'" in missing
    assert "before" in primary and "late" in primary


def rota(*args: str, check: bool = True) -> str:
    """The output of ``rota ARGS`` (its error output too, unless ``check``:
    then it must succeed)."""
    done = subprocess.run(
        [ROTA, *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={k: v for k, v in os.environ.items() if not k.startswith("ROTA_")},
        check=False,
    )
    if check:
        assert done.returncode == 0, done.stderr
        return done.stdout
    return done.stdout + done.stderr


def test_a_write_on_the_replica_is_refused_by_the_server(app: App, pair: Pair) -> None:
    on_replica = App(pair.url)
    on_replica.use_store(app.reader)
    task = on_replica.task(name="fetch")(lambda page: page)
    with pytest.raises(StoreError, match="read-only"):
        task.send("page")
    with pytest.raises(StoreError, match="read-only"):
        app.reader.pause_queue("default")
    assert listed(app.store) == set()
    assert not any(info.paused for info in app.store.queues())


def test_a_read_url_that_reaches_the_primary_changes_nothing(pg_cluster: PgCluster) -> None:
    """A reader's transactions are read-only on any server, as on MySQL."""
    app = App(f"{pg_cluster.url()}?schema={SCHEMA}", read_url=pg_cluster.url())
    try:
        app.store.queues()  # the store, migrated
        with pytest.raises(StoreError, match="read-only"):
            app.reader.pause_queue("default")
        assert app.reader.queues() == app.store.queues() == []
    finally:
        app.close()


def test_a_read_url_on_a_store_that_is_not_postgres_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sqlite = f"sqlite:///{tmp_path / 'rota.db'}"
    replica = "postgresql://postgres@127.0.0.1:5433/postgres"  # refused before any connection
    with pytest.raises(InvalidArgument, match="works only with a PostgreSQL or MySQL store"):
        App(sqlite, read_url=replica)
    with pytest.raises(InvalidArgument, match="is a SQLite store"):
        App(f"{sqlite}?read_url={quote(replica, safe='')}")
    monkeypatch.setenv("ROTA_READ_URL", replica)
    from_env = App(sqlite)
    try:
        with pytest.raises(InvalidArgument, match="works only with a PostgreSQL or MySQL store"):
            from_env.reader  # noqa: B018
        assert from_env.store.queues() == []  # the store itself is fine
    finally:
        from_env.close()


def test_a_read_url_to_a_database_without_the_store_is_refused_naming_it(
    app: App, pair: Pair
) -> None:
    elsewhere = pair.read_url.rsplit("/", 1)[0] + "/template1"  # the replica, another database
    other = App(pair.url, read_url=elsewhere)
    try:
        with pytest.raises(StoreError, match=f"has no rota store in schema {SCHEMA}"):
            other.reader  # noqa: B018
    finally:
        other.close()


def test_the_replica_says_how_far_it_trails(app: App, pair: Pair) -> None:
    reader = app.reader
    assert app.store.replication_lag() is None  # a primary
    app.tasks["fetch"].send("before")
    pair.caught_up()
    wait_for(lambda: reader.replication_lag() == 0.0, 30, 0.05, "no lag")
    status = subprocess.run(
        [ROTA, "status", "--url", pair.url, "--read-url", pair.read_url],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert "(caught up)" in status.stdout, status.stdout + status.stderr
    pair.pause_replay()
    try:
        app.tasks["fetch"].send("after")
        lag = wait_for(lambda: reader.replication_lag(), 30, 0.05, "a lag")
        assert lag > 0
        status = subprocess.run(
            [ROTA, "status", "--url", pair.url, "--read-url", pair.read_url],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert " s behind)" in status.stdout, status.stdout + status.stderr
    finally:
        pair.resume_replay()
