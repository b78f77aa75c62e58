"""What only the PostgreSQL store promises: which of the caller's
connections a send in its transaction refuses (what every store with such
sends does is in ``test_transactional_sends.py``), a schema per app,
migrations safe when many processes start at once, limits that hold under
many concurrent claimers, LISTEN/NOTIFY wake-ups, and the database's clock."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

psycopg = pytest.importorskip("psycopg")
pg_errors = psycopg.errors

from backends import POSTGRES_URL, drop_store, pg_execute, store_url  # noqa: E402
from conformance.support import claim, enqueue_one, new_job  # noqa: E402
from helpers import wait_for  # noqa: E402
from rota import App  # noqa: E402
from rota.cli import main  # noqa: E402
from rota.errors import InvalidArgument, StoreError, StoreUnavailable, ValueRefused  # noqa: E402
from rota.models import ConcurrencyKey, JobState, Outcome  # noqa: E402
from rota.stores import open_store  # noqa: E402
from rota.stores.postgres import PostgresStore  # noqa: E402
from rota.stores.postgres._tx import store_error  # noqa: E402
from rota.stores.sql.queries import migrations  # noqa: E402

#: The schema versions this release ships, as the server lists them.
SHIPPED = [(number,) for number, _ in migrations("rota.stores.postgres")]


@pytest.fixture
def pg_url(tmp_path: Path) -> Iterator[str]:
    url = store_url("postgres", tmp_path)
    yield url
    drop_store("postgres", url)


@pytest.fixture
def pstore(pg_url: str) -> Iterator[PostgresStore]:
    store = open_store(pg_url)
    assert isinstance(store, PostgresStore)
    yield store
    store.close()


@pytest.fixture
def app(pg_url: str) -> Iterator[App]:
    app = App(pg_url)
    app.task(name="ship")(lambda order: order)
    yield app
    app.close()


# -- transactional enqueue -------------------------------------------------------------------


def test_sending_in_a_transaction_needs_an_open_one(app: App, pg_url: str) -> None:
    conn = psycopg.connect(pg_url.split("?", 1)[0], autocommit=True)
    try:
        with pytest.raises(InvalidArgument, match="no open transaction"):
            app.tasks["ship"].send(5, connection=conn)
    finally:
        conn.close()
    assert claim(app.store, limit=10) == []


def test_sending_in_a_failed_transaction_says_so(app: App, pg_url: str) -> None:
    conn = psycopg.connect(pg_url.split("?", 1)[0])
    try:
        conn.execute("SELECT 1")
        with pytest.raises(psycopg.errors.DivisionByZero):
            conn.execute("SELECT 1 / 0")
        with pytest.raises(InvalidArgument, match="transaction has failed"):
            app.tasks["ship"].send(5, connection=conn)
        conn.rollback()
        pipelined = pytest.raises(InvalidArgument, match="pipeline mode")
        with conn.transaction(), conn.pipeline(), pipelined:
            app.tasks["ship"].send(5, connection=conn)
    finally:
        conn.close()
    assert claim(app.store, limit=10) == []


def test_sending_on_a_closed_connection_says_so(app: App, pg_url: str) -> None:
    conn = psycopg.connect(pg_url.split("?", 1)[0])
    conn.close()
    with pytest.raises(InvalidArgument, match="connection is closed"):
        app.tasks["ship"].send(1, connection=conn)


def test_sending_in_a_transaction_needs_a_synchronous_connection(app: App, pg_url: str) -> None:
    async def send_on_async_connection() -> None:
        conn = await psycopg.AsyncConnection.connect(pg_url.split("?", 1)[0])
        try:
            async with conn.transaction():
                app.tasks["ship"].send(5, connection=conn)
        finally:
            await conn.close()

    with pytest.raises(InvalidArgument, match="AsyncConnection"):
        asyncio.run(send_on_async_connection())
    assert claim(app.store, limit=10) == []


@pytest.fixture
def other_database() -> Iterator[str]:
    """The URL of a database of its own on the same server, dropped afterwards."""
    name = f"rota_test_other_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    yield POSTGRES_URL.rsplit("/", 1)[0] + "/" + name
    with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def test_sending_in_a_transaction_of_another_database_is_refused(
    app: App, other_database: str
) -> None:
    conn = psycopg.connect(other_database)
    try:
        refused = pytest.raises(InvalidArgument, match="reaches database 'rota_test_other_")
        with conn.transaction(), refused:
            app.tasks["ship"].send(5, connection=conn)
    finally:
        conn.close()
    assert claim(app.store, limit=10) == []


def test_a_nul_in_a_text_is_refused_by_name_and_changes_nothing(pstore: PostgresStore) -> None:
    enqueue_one(pstore, new_job(1))
    [running] = claim(pstore)
    with pytest.raises(ValueRefused, match="cannot contain NUL"):
        pstore.finish([Outcome(running.id, running.token, False, error="bad\0byte")])
    job = pstore.get_job(running.id)
    assert job is not None and job.state is JobState.RUNNING


@pytest.mark.parametrize(
    ("error", "kind", "words"),
    [
        (
            pg_errors.SerializationFailure("could not serialize access"),
            StoreUnavailable,
            "rolled back a transaction that conflicted with a concurrent one",
        ),
        (pg_errors.DeadlockDetected("deadlock"), StoreUnavailable, "to break a deadlock"),
        (pg_errors.LockNotAvailable("lock timeout"), StoreUnavailable, "did not grant a lock"),
        (pg_errors.QueryCanceled("statement timeout"), StoreUnavailable, "cancelled a statement"),
        (pg_errors.DiskFull("could not extend file"), StoreUnavailable, "short of resources"),
        (pg_errors.TooManyConnections("too many"), StoreUnavailable, "short of resources"),
        (pg_errors.InsufficientPrivilege("permission denied"), StoreError, "want of a right"),
        (pg_errors.ReadOnlySqlTransaction("read-only"), StoreError, "is read-only"),
        (pg_errors.AdminShutdown("terminating connection"), StoreUnavailable, "cannot be reached"),
        (
            psycopg.OperationalError("server closed the connection"),
            StoreUnavailable,
            "cannot be reached",
        ),
        (
            psycopg.OperationalError('connection is bad: invalid sslmode value: "bogus"'),
            StoreError,
            "cannot work with a connection setting",
        ),
        (
            psycopg.OperationalError("failed: server does not support SSL, but SSL was required"),
            StoreError,
            "cannot work with a connection setting",
        ),
    ],
)
def test_server_errors_say_what_happened_and_only_lost_connections_cannot_be_reached(
    error: Exception, kind: type[StoreError], words: str
) -> None:
    found = store_error(error, "db:5432/app")
    assert type(found) is kind
    assert str(found).startswith("the PostgreSQL store at db:5432/app ")
    assert words in str(found)
    assert ("cannot be reached" in str(found)) == (words == "cannot be reached")


@pytest.mark.parametrize("setting", ["sslmode=bogus", "target_session_attrs=bogus"])
def test_a_connection_setting_that_cannot_work_is_refused_at_once(
    pg_url: str, setting: str
) -> None:
    """Not "cannot be reached": a worker would try again for ever."""
    with pytest.raises(StoreError, match="cannot work with a connection setting") as refused:
        open_store(f"{pg_url}&{setting}")
    assert not isinstance(refused.value, StoreUnavailable)


def test_a_lock_not_granted_in_time_is_run_again_then_said(pg_url: str) -> None:
    open_store(pg_url).close()
    store = open_store(f"{pg_url}&options=-c%20lock_timeout%3D20")
    locker = psycopg.connect(pg_url.split("?", 1)[0])
    try:
        locker.execute(f"LOCK TABLE {pg_url.split('schema=', 1)[1]}.jobs")
        with pytest.raises(StoreUnavailable) as caught:
            enqueue_one(store, new_job(1))
        assert "did not grant a lock in time (lock_timeout)" in str(caught.value)
        assert "cannot be reached" not in str(caught.value)
        locker.rollback()
        assert enqueue_one(store, new_job(2))
    finally:
        locker.close()
        store.close()


def test_a_database_that_does_not_exist_is_reported_at_once() -> None:
    name = f"rota_test_missing_{uuid.uuid4().hex[:12]}"
    started = time.monotonic()
    with pytest.raises(StoreError, match=f'refused the connection: .*database "{name}" does not'):
        open_store(POSTGRES_URL.rsplit("/", 1)[0] + "/" + name)
    assert time.monotonic() - started < 5.0  # not after the pool's retries
    with pytest.raises(StoreError) as refused:
        open_store(POSTGRES_URL.rsplit("/", 1)[0] + "/" + name)
    assert not isinstance(refused.value, StoreUnavailable)  # trying again changes nothing


def test_sending_in_a_transaction_needs_a_postgresql_store(tmp_path: Path) -> None:
    app = App(f"sqlite:///{tmp_path / 'rota.db'}")
    app.task(name="ship")(lambda order: order)
    conn = psycopg.connect(store_url("postgres", tmp_path).split("?", 1)[0])
    try:
        with pytest.raises(InvalidArgument, match="needs a PostgreSQL or MySQL store"):
            app.tasks["ship"].send(6, connection=conn)
    finally:
        conn.close()
        app.close()


# -- schemas and migrations ----------------------------------------------------------------------


def test_apps_in_two_schemas_of_one_database_see_only_their_own_jobs(
    pstore: PostgresStore, tmp_path: Path
) -> None:
    other_url = store_url("postgres", tmp_path)
    other = open_store(other_url)
    try:
        mine = enqueue_one(pstore, new_job(1))
        theirs = enqueue_one(other, new_job(2))
        assert [c.id for c in claim(pstore, limit=10)] == [mine]
        assert [c.id for c in claim(other, limit=10)] == [theirs]
    finally:
        other.close()
        drop_store("postgres", other_url)


#: Commands that only read or steer what is in a store.
READ_ONLY_COMMANDS = [["status"], ["jobs", "list"], ["queues", "list"], ["schedules", "list"]]


@pytest.mark.parametrize("command", READ_ONLY_COMMANDS)
def test_read_only_commands_refuse_a_schema_without_a_store_and_create_nothing(
    pg_url: str, command: list[str]
) -> None:
    schema = pg_url.split("schema=", 1)[1]
    result = CliRunner(env={"ROTA_URL": None}).invoke(main, ["--url", pg_url, *command])
    assert result.exit_code == 1, result.output
    assert result.stderr.startswith(
        f"Error: no PostgreSQL store in schema {schema} at 127.0.0.1:5432/postgres (the "
        "schema does not exist): check --url, ROTA_URL and the URL's schema= option; "
        "a worker, `rota run` or `rota send APP TASK` creates it"
    )
    assert pg_execute(pg_url, "SELECT FROM pg_namespace WHERE nspname = %s", (schema,)) == 0


def test_read_only_commands_read_a_store_that_exists(pg_url: str) -> None:
    open_store(pg_url).close()
    result = CliRunner(env={"ROTA_URL": None}).invoke(main, ["--url", pg_url, "jobs", "list"])
    assert result.exit_code == 0, result.output


def test_a_bad_schema_name_is_refused_before_connecting() -> None:
    with pytest.raises(InvalidArgument, match="not a plain identifier"):
        open_store("postgresql://postgres@127.0.0.1:5432/postgres?schema=Robert%27;drop")
    with pytest.raises(InvalidArgument, match="bad PostgreSQL URL: "):
        open_store("postgresql://postgres@127.0.0.1:5432/postgres?namespace=x")


def test_a_failed_statement_rolls_its_transaction_back_and_leaves_the_connection_clean(
    pstore: PostgresStore,
) -> None:
    job_id = enqueue_one(pstore, new_job(1))

    def work(tx: object) -> None:
        tx._conn.execute("UPDATE jobs SET priority = 7 WHERE id = %s", (job_id,))  # type: ignore[attr-defined]
        tx._conn.execute("SELECT 1 / 0").fetchone()  # type: ignore[attr-defined]

    with pytest.raises(StoreError, match="division by zero"):
        pstore._transact(work)
    job = pstore.get_job(job_id)
    assert job is not None and job.priority != 7  # the update before the failure is undone
    for _ in range(3):  # every pooled connection is usable, outside any transaction
        with pstore._pool.connection() as conn:
            assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    assert claim(pstore, limit=1)[0].id == job_id


def test_libpq_options_in_the_url_reach_the_server(pg_url: str) -> None:
    url = f"{pg_url}&application_name=nightly%20cron&options=-c%20statement_timeout%3D4321"
    store = open_store(url)
    assert isinstance(store, PostgresStore)
    try:
        assert store.get_job("absent") is None  # the store's schema, beside the given options
        with store._pool.connection() as conn:
            assert conn.execute("SHOW statement_timeout").fetchone()[0] == "4321ms"
            assert conn.execute("SHOW application_name").fetchone()[0] == "nightly cron"
            assert conn.execute("SHOW search_path").fetchone()[0] == store.schema
    finally:
        store.close()


def test_many_processes_opening_a_new_schema_at_once_migrate_it_once(pg_url: str) -> None:
    code = "import sys; from rota.stores import open_store; open_store(sys.argv[1]).close()"
    procs = [subprocess.Popen([sys.executable, "-c", code, pg_url]) for _ in range(6)]
    try:
        codes = [proc.wait(60) for proc in procs]
    finally:
        for proc in procs:
            proc.kill()
    assert codes == [0] * 6
    schema = pg_url.split("schema=", 1)[1]
    with psycopg.connect(pg_url.split("?", 1)[0]) as conn:
        versions = conn.execute(f"SELECT version FROM {schema}.schema_versions").fetchall()
    assert versions == SHIPPED


# -- concurrency ------------------------------------------------------------------------------


def test_a_concurrency_limit_holds_under_many_concurrent_claimers(pg_url: str) -> None:
    """Eight stores (eight connection pools) claim and finish at once; a key
    allowing two never has more than two running, no claim fails, every job
    runs once."""
    first = open_store(pg_url)
    key = ConcurrencyKey("site:example.org", 2)
    ids = {enqueue_one(first, new_job(i, concurrency=(key,))) for i in range(120)}
    running: set[str] = set()
    peak = 0
    done: list[str] = []
    errors: list[BaseException] = []
    guard = threading.Lock()

    def claimer(n: int) -> None:
        store = open_store(pg_url)
        try:
            while True:
                with guard:
                    if len(done) >= len(ids):
                        return
                for job in store.claim(f"w{n}", ["default"], 2):
                    nonlocal peak
                    with guard:
                        running.add(job.id)
                        peak = max(peak, len(running))
                    time.sleep(0.001)
                    with guard:
                        running.discard(job.id)
                        done.append(job.id)
                    assert store.finish([Outcome(job.id, job.token, True, result=b"1")]) == [True]
        except BaseException as exc:
            errors.append(exc)
        finally:
            store.close()

    threads = [threading.Thread(target=claimer, args=(n,), daemon=True) for n in range(8)]
    for thread in threads:
        thread.start()
    wait_for(lambda: not any(t.is_alive() for t in threads), 120, 0.05, "the claimers to finish")
    first.close()
    assert errors == []
    assert peak <= 2
    assert sorted(done) == sorted(ids)


def test_the_store_clock_is_the_databases(pstore: PostgresStore, pg_url: str) -> None:
    with psycopg.connect(pg_url.split("?", 1)[0]) as conn:
        server = conn.execute("SELECT extract(epoch FROM clock_timestamp())").fetchone()[0]
    assert abs(pstore.now() - float(server)) < 1.0


def test_a_raw_write_helper_reaches_the_stores_schema(pstore: PostgresStore, pg_url: str) -> None:
    job_id = enqueue_one(pstore, new_job(9))
    assert pg_execute(pg_url, "UPDATE jobs SET priority = 3 WHERE id = %s", (job_id,)) == 1
    job = pstore.get_job(job_id)
    assert job is not None and job.priority == 3
