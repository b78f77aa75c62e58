"""Jobs sent in the caller's own MySQL / MariaDB transaction (``connection=``):
they appear when it commits and never when it rolls back, from a connection
to any database of the server; a refused send leaves the transaction usable;
an idle worker wakes at the commit; the open transaction holds up no other
send; the caller's session is as it was afterwards."""

from __future__ import annotations

import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest

MySQLdb = pytest.importorskip("MySQLdb")

from backends import MYSQL_URL  # noqa: E402
from conformance.support import claim, new_job, schedule  # noqa: E402
from rota import App  # noqa: E402
from rota.errors import InvalidArgument  # noqa: E402
from rota.models import JobState  # noqa: E402
from rota.stores.mysql import store as mysql_store  # noqa: E402


def _server(database: str | None) -> dict[str, Any]:
    parts = urlsplit(MYSQL_URL)
    return {
        "host": parts.hostname or "127.0.0.1",
        "port": parts.port or 3306,
        "user": parts.username or "root",
        "password": parts.password or "",
        **({"database": database} if database else {}),
    }


def _connect(database: str | None = None, **options: Any) -> Any:
    """A connection of the caller's, with the running test's driver."""
    return _DRIVER[0].connect(**_server(database), **options)


#: The driver of the caller's connections in the running test.
_DRIVER: list[Any] = [MySQLdb]


@pytest.fixture(autouse=True, params=["mysqlclient", "pymysql", "connector"])
def driver(request: pytest.FixtureRequest) -> Iterator[Any]:
    """Each test with a mysqlclient connection, then a PyMySQL one, then a
    MySQL Connector/Python one."""
    modules = {"mysqlclient": "MySQLdb", "pymysql": "pymysql", "connector": "mysql.connector"}
    module = pytest.importorskip(modules[request.param])
    _DRIVER[0] = module
    yield module
    _DRIVER[0] = MySQLdb


@pytest.fixture
def app(my_url: str) -> Iterator[App]:
    app = App(my_url)
    app.task(name="ship")(lambda order: order)
    yield app
    app.close()


@pytest.fixture
def business(app: App) -> Iterator[str]:
    """A database of the caller's own, beside the store's, with an orders table."""
    name = f"rota_biz_{uuid.uuid4().hex[:12]}"
    admin = _connect(autocommit=True)
    try:
        admin.cursor().execute(f"CREATE DATABASE {name}")
        admin.cursor().execute(f"CREATE TABLE {name}.orders (id INT) ENGINE=InnoDB")
        yield name
    finally:
        admin.cursor().execute(f"DROP DATABASE IF EXISTS {name}")
        admin.close()


def _one(conn: Any, sql: str) -> Any:
    cursor = conn.cursor()
    cursor.execute(sql)
    return cursor.fetchone()[0]


def test_a_job_sent_in_a_transaction_appears_at_commit(app: App, business: str) -> None:
    conn = _connect(business)
    try:
        conn.cursor().execute("SET SESSION sql_mode = 'ANSI_QUOTES', time_zone = '+05:00'")
        conn.cursor().execute("INSERT INTO orders VALUES (1)")
        handle = app.tasks["ship"].send(1, connection=conn)
        assert app.store.get_job(handle.id) is None  # not visible outside the transaction
        assert claim(app.store, limit=10) == []
        # the caller's session is as it was
        assert _one(conn, "SELECT DATABASE()") == business
        assert _one(conn, "SELECT @@SESSION.sql_mode") == "ANSI_QUOTES"
        assert _one(conn, "SELECT @@SESSION.time_zone") == "+05:00"
        conn.commit()
        job = app.store.get_job(handle.id)
        assert job is not None and job.state is JobState.QUEUED and job.args == [1]
        assert [c.id for c in claim(app.store, limit=10)] == [handle.id]
        assert _one(conn, "SELECT COUNT(*) FROM orders") == 1
    finally:
        conn.close()


def test_a_job_sent_in_a_transaction_that_rolls_back_never_exists(app: App, business: str) -> None:
    conn = _connect(business)
    try:
        conn.cursor().execute("INSERT INTO orders VALUES (2)")
        handles = app.tasks["ship"].send_many([(2,), (3,)], connection=conn)
        conn.rollback()
        assert app.store.get_jobs([h.id for h in handles]) == [None, None]
        assert _one(conn, "SELECT COUNT(*) FROM orders") == 0
        assert claim(app.store, limit=10) == []
    finally:
        conn.close()


def test_a_reused_id_in_a_transaction_is_refused_and_leaves_it_usable(
    app: App, business: str
) -> None:
    existing = app.tasks["ship"].send(0).id
    conn = _connect(business)
    try:
        conn.cursor().execute("INSERT INTO orders VALUES (7)")
        with pytest.raises(InvalidArgument, match=f"a job with id '{existing}' already exists"):
            app.store.enqueue_in(conn, [app.tasks["ship"].new_job((7,), {}, job_id=existing)])  # type: ignore[attr-defined]
        kept = app.tasks["ship"].send(8, connection=conn)  # the transaction goes on
        conn.commit()
        assert _one(conn, "SELECT COUNT(*) FROM orders") == 1
        assert app.store.get_job(kept.id) is not None
        assert app.store.get_job(existing).args == [0]  # type: ignore[union-attr]
    finally:
        conn.close()


def test_a_worker_waiting_is_woken_when_the_transaction_commits(app: App, business: str) -> None:
    store = app.store
    assert claim(store, limit=1) == []
    store.wait(["default"], 0.01)  # this thread has seen the count: a change wakes it
    woke = threading.Event()

    def waiter() -> None:
        store.wait(["default"], 20.0)
        woke.set()

    conn = _connect(business)
    try:
        app.tasks["ship"].send(4, connection=conn)
        thread = threading.Thread(target=waiter, daemon=True)
        thread.start()
        assert not woke.wait(0.5)  # nothing committed yet: it sleeps
        started = time.monotonic()
        conn.commit()
        assert woke.wait(10.0)
        assert time.monotonic() - started < 1.0
        thread.join(10)
    finally:
        conn.close()


def test_an_open_transaction_that_sent_a_job_holds_up_no_other_send(app: App) -> None:
    """A send of another job of the queue, a schedule's fire into it and a
    claim and finish go on while the caller's transaction that sent a job is
    open (the shared wake-up count is not its to hold)."""
    store = app.store
    store.upsert_schedule(schedule("nightly", next_fire=1_000.0))
    database = app.url.rsplit("/", 1)[1]
    conn = _connect(database)
    done = threading.Event()
    sent: list[str] = []

    def others() -> None:
        sent.append(app.tasks["ship"].send(2).id)
        fired = new_job(job_id="fired", schedule="nightly", fire_time=1_000.0)
        sent.append(store.fire_schedule("nightly", 1_000.0, 2_000.0, fired))
        done.set()

    try:
        first = app.tasks["ship"].send(1, connection=conn)
        threading.Thread(target=others, daemon=True).start()
        assert done.wait(10), "a send waited for the caller's transaction"
        conn.commit()
        assert sent[1] == "fired"
        # the jobs keep the order they were sent in
        assert [c.id for c in claim(store, limit=10)] == [first.id, sent[0], "fired"]
    finally:
        conn.close()


def test_a_connection_that_reads_dicts_can_send_in_its_transaction(
    app: App, business: str, driver: Any
) -> None:
    # mysqlclient and PyMySQL read dicts by the connection's cursor class,
    # Connector/Python by the cursor's
    connector = driver.__name__ == "mysql.connector"
    dicts = {} if connector else {"cursorclass": driver.cursors.DictCursor}
    conn = _connect(business, **dicts)
    try:
        handle = app.tasks["ship"].send(3, connection=conn)
        cursor = conn.cursor(dictionary=True) if connector else conn.cursor()
        cursor.execute("SELECT 1 AS one")
        assert cursor.fetchone() == {"one": 1}  # as it was
        conn.commit()
        assert app.store.get_job(handle.id) is not None
    finally:
        conn.close()


def test_a_connection_in_autocommit_sends_in_the_transaction_it_began(
    app: App, business: str
) -> None:
    conn = _connect(business, autocommit=True)
    try:
        with pytest.raises(InvalidArgument, match="no open transaction: it is in autocommit"):
            app.tasks["ship"].send(5, connection=conn)
        assert claim(app.store, limit=10) == []
        (conn.start_transaction if hasattr(conn, "start_transaction") else conn.begin)()
        handle = app.tasks["ship"].send(6, connection=conn)
        assert app.store.get_job(handle.id) is None
        conn.commit()
        assert app.store.get_job(handle.id) is not None
    finally:
        conn.close()


def test_connections_a_send_cannot_use_are_refused(app: App, business: str, driver: Any) -> None:
    conn = _connect(business)
    conn.close()
    with pytest.raises(InvalidArgument, match="connection is closed"):
        app.tasks["ship"].send(1, connection=conn)
    other = sqlite3.connect(":memory:")
    with pytest.raises(
        InvalidArgument, match=r"mysqlclient .* PyMySQL or MySQL Connector/Python .* not Connection"
    ):
        app.tasks["ship"].send(1, connection=other)
    other.close()
    bare = _connect()
    try:
        with pytest.raises(InvalidArgument, match="no current database"):
            app.tasks["ship"].send(1, connection=bare)
    finally:
        bare.close()
    if driver.__name__ == "mysql.connector":  # values read unconverted, for its whole session
        raw = _connect(business, raw=True)
        try:
            with pytest.raises(InvalidArgument, match=r"raw values .*made without raw=True"):
                app.tasks["ship"].send(1, connection=raw)
            cursor = raw.cursor()
            cursor.execute("SELECT DATABASE()")
            assert cursor.fetchone() == (business.encode(),)  # its session as it was
        finally:
            raw.close()
    assert claim(app.store, limit=10) == []


def test_sends_in_transactions_fold_the_wake_ups_of_earlier_committed_ones(
    app: App, business: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(mysql_store, "_FOLD_EVERY", 0.0)  # (1 s: at every send here)
    conn = _connect(business)
    look = _connect(app.url.rsplit("/", 1)[1], autocommit=True)  # reads what is committed
    seen = "SELECT (SELECT value FROM meta WHERE `key` = 'wakeups') + (SELECT COUNT(*) FROM wakes)"
    try:
        assert app.store.queues() == []  # (the store is made)
        before = _one(look, seen)
        for order in range(20):
            app.tasks["ship"].send(order, connection=conn)
            conn.commit()
        assert _one(look, "SELECT COUNT(*) FROM wakes") == 1  # the last one's
        assert _one(look, seen) == before + 20  # what idle workers see: one wake-up a send
    finally:
        conn.close()
        look.close()


def test_the_retention_pass_folds_the_wake_ups_of_committed_sends(app: App, business: str) -> None:
    store = app.store
    conn = _connect(business)
    look = _connect(app.url.rsplit("/", 1)[1], autocommit=True)  # reads what is committed
    try:
        app.tasks["ship"].send(1, connection=conn)
        conn.commit()
        count = _one(look, "SELECT value FROM meta WHERE `key` = 'wakeups'")
        assert _one(look, "SELECT COUNT(*) FROM wakes") == 1
        store.purge_finished(3600)
        assert _one(look, "SELECT COUNT(*) FROM wakes") == 0
        # what idle workers see is unchanged
        assert _one(look, "SELECT value FROM meta WHERE `key` = 'wakeups'") == count + 1
        app.tasks["ship"].send(2, connection=conn)
        store.purge_finished(3600)  # while its transaction is open: not folded, not waited for
        conn.commit()
        assert _one(look, "SELECT COUNT(*) FROM wakes") == 1
    finally:
        conn.close()
        look.close()
