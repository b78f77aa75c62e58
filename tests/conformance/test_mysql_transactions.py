"""What only the MySQL / MariaDB store does with jobs sent in the caller's
own transaction (``connection=``), with each driver: a connection in
autocommit mode, connections a send cannot use, and the wake-up rows of such
sends folded into the shared count. What every store with such sends does
is in ``test_transactional_sends.py``."""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest

MySQLdb = pytest.importorskip("MySQLdb")

from backends import MYSQL_URL  # noqa: E402
from conformance.support import claim  # noqa: E402
from rota import App  # noqa: E402
from rota.errors import InvalidArgument  # noqa: E402
from rota.stores.mysql import store as mysql_store  # noqa: E402
from rota.stores.mysql._tx import Q  # noqa: E402


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
        InvalidArgument,
        match=r"mysqlclient .* PyMySQL or MySQL Connector/Python .* not a sqlite3\.Connection",
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


def test_the_claim_reads_the_ready_index_whatever_the_statistics(app: App, driver: Any) -> None:
    """The claim's candidates come from the ready index, in claim order, and
    never from an intersection of two other indexes: MariaDB picks one once
    most jobs are finished or scheduled, and its scan waits on a job that a
    caller's open transaction inserted, SKIP LOCKED notwithstanding, which
    holds up every claim until that transaction ends."""
    app.tasks["ship"].send(1)
    conn = _connect(urlsplit(app.url).path.lstrip("/").split("?")[0], autocommit=True)
    try:
        cursor = conn.cursor()
        cursor.execute("EXPLAIN " + Q["ready_candidates"], ("default", "host", 300, 16, 0))
        plan = cursor.fetchall()[0]
    finally:
        conn.close()
    assert "jobs_ready" in str(plan) and "intersect" not in str(plan), plan
