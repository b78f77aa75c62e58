"""Jobs sent in the caller's own database transaction (``connection=``), on
every store that takes them, with every driver a caller may use: they appear
when it commits and never when it rolls back; the caller's session is as it
was; a refused send leaves the transaction usable; an idle worker wakes at
the commit; the open transaction holds up no other send or schedule fire; a
connection that reads rows its own way (dicts) sends all the same.

What only one store checks (PostgreSQL: closed, failed or asynchronous
connections, another database; MySQL: autocommit, the wake-up rows) is in
``test_postgres_specific.py`` and ``test_mysql_transactions.py``."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from backends import drop_store, store_url
from conformance.support import claim, new_job, schedule
from rota import App
from rota.errors import InvalidArgument
from rota.models import JobState

#: A store, and the driver of the caller's connections.
KINDS = [
    ("postgres", "psycopg"),
    ("mysql", "mysqlclient"),
    ("mysql", "pymysql"),
    ("mysql", "connector"),
]
_MODULES = {
    "psycopg": "psycopg",
    "mysqlclient": "MySQLdb",
    "pymysql": "pymysql",
    "connector": "mysql.connector",
}


@dataclass
class Caller:
    """The caller's side of a store: its own connections to the store's
    server with one driver, not in autocommit (a statement begins a
    transaction: each test writes a row of the caller's first), and a table
    of its own."""

    app: App
    kind: str
    driver: Any
    connect: Callable[..., Any]
    table: str
    #: Sets the caller's session away from the defaults, so that a send that
    #: did not put it back would show.
    own_session: str
    #: Reads the caller's session settings (one row).
    session: str
    #: Within how many seconds of the commit a waiting worker wakes.
    wakes_within: float
    dropped: list[Callable[[], None]] = field(default_factory=list)

    def one(self, conn: Any, sql: str) -> Any:
        """The first row of ``sql`` on ``conn``."""
        cursor = conn.cursor()
        cursor.execute(sql)
        return cursor.fetchone()

    def orders(self, conn: Any) -> int:
        """The caller's rows, as its transaction sees them."""
        return int(self.one(conn, f"SELECT COUNT(*) FROM {self.table}")[0])

    def order(self, conn: Any, number: int) -> None:
        """A row of the caller's, in its transaction."""
        conn.cursor().execute(f"INSERT INTO {self.table} VALUES ({number})")

    def dict_reading(self) -> tuple[Any, Callable[[Any], Any]]:
        """A connection whose rows read as dicts, and how to make its cursor."""
        name = self.driver.__name__
        if name == "psycopg":
            conn = self.connect(row_factory=self.driver.rows.dict_row)
            return conn, lambda c: c.cursor()
        if name == "mysql.connector":  # dicts by the cursor
            return self.connect(), lambda c: c.cursor(dictionary=True)
        conn = self.connect(cursorclass=self.driver.cursors.DictCursor)
        return conn, lambda c: c.cursor()


@pytest.fixture(params=KINDS, ids=["-".join(kind) for kind in KINDS])
def caller(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Caller]:
    kind, driver_name = request.param
    driver = pytest.importorskip(_MODULES[driver_name])
    url = store_url(kind, tmp_path)
    app = App(url)
    app.task(name="ship")(lambda order: order)
    app.store.queues()  # made
    if kind == "postgres":
        made = _postgres_caller(app, driver, url)
    else:
        made = _mysql_caller(app, driver, url)
    try:
        yield made
    finally:
        for drop in made.dropped:
            drop()
        app.close()
        drop_store(kind, url)


def _postgres_caller(app: App, driver: Any, url: str) -> Caller:
    """psycopg connections to the store's database; the caller's table in ``public``."""
    dsn, schema = url.split("?", 1)[0], url.split("schema=", 1)[1]
    table = f"public.orders_{schema}"
    with driver.connect(dsn, autocommit=True) as admin:
        admin.execute(f"CREATE TABLE {table} (id int)")

    def drop() -> None:
        with driver.connect(dsn, autocommit=True) as admin:
            admin.execute(f"DROP TABLE IF EXISTS {table}")

    return Caller(
        app=app,
        kind="postgres",
        driver=driver,
        connect=lambda **options: driver.connect(dsn, **options),
        table=table,
        own_session="SET search_path = pg_catalog, public",
        session="SHOW search_path",
        wakes_within=2.0,
        dropped=[drop],
    )


def _mysql_caller(app: App, driver: Any, url: str) -> Caller:
    """Connections to a database of the caller's own beside the store's (any
    of the server's will do), which holds its table."""
    parts = urlsplit(url)
    server = {
        "host": parts.hostname or "127.0.0.1",
        "port": parts.port or 3306,
        "user": parts.username or "root",
        "password": parts.password or "",
    }
    business = f"rota_biz_{uuid.uuid4().hex[:12]}"
    admin = driver.connect(**server, autocommit=True)
    admin.cursor().execute(f"CREATE DATABASE {business}")
    admin.cursor().execute(f"CREATE TABLE {business}.orders (id INT) ENGINE=InnoDB")

    def drop() -> None:
        admin.cursor().execute(f"DROP DATABASE IF EXISTS {business}")
        admin.close()

    return Caller(
        app=app,
        kind="mysql",
        driver=driver,
        connect=lambda **options: driver.connect(**server, database=business, **options),
        table="orders",
        own_session="SET SESSION sql_mode = 'ANSI_QUOTES', time_zone = '+05:00'",
        session="SELECT DATABASE(), @@SESSION.sql_mode, @@SESSION.time_zone",
        wakes_within=1.0,
        dropped=[drop],
    )


def test_a_job_sent_in_a_transaction_appears_at_commit(caller: Caller) -> None:
    app, conn = caller.app, caller.connect()
    try:
        conn.cursor().execute(caller.own_session)
        before = caller.one(conn, caller.session)
        caller.order(conn, 1)
        handle = app.tasks["ship"].send(1, connection=conn)
        assert app.store.get_job(handle.id) is None  # not visible outside the transaction
        assert claim(app.store, limit=10) == []
        assert caller.one(conn, caller.session) == before  # the caller's session as it was
        conn.commit()
        job = app.store.get_job(handle.id)
        assert job is not None and job.state is JobState.QUEUED and job.args == [1]
        assert [c.id for c in claim(app.store, limit=10)] == [handle.id]
        assert caller.orders(conn) == 1
    finally:
        conn.close()


@pytest.mark.parametrize("end", ["commit", "rollback"])
def test_a_send_that_is_the_transactions_first_statement_begins_it(
    caller: Caller, end: str
) -> None:
    """Not in autocommit, a connection begins a transaction at its first
    statement, which may be the send's (SQLAlchemy's ``engine.begin()``
    runs none before the first): the job exists if and only if it commits."""
    app, conn = caller.app, caller.connect()
    try:
        handle = app.tasks["ship"].send(7, connection=conn)
        assert app.store.get_job(handle.id) is None
        caller.order(conn, 7)
        getattr(conn, end)()
        job = app.store.get_job(handle.id)
        if end == "commit":
            assert job is not None and job.args == [7] and caller.orders(conn) == 1
        else:
            assert job is None and caller.orders(conn) == 0
    finally:
        conn.close()


def test_a_job_sent_in_a_transaction_that_rolls_back_never_exists(caller: Caller) -> None:
    app, conn = caller.app, caller.connect()
    try:
        caller.order(conn, 2)
        handles = app.tasks["ship"].send_many([(2,), (3,)], connection=conn)
        conn.rollback()
        assert app.store.get_jobs([h.id for h in handles]) == [None, None]
        assert caller.orders(conn) == 0
        assert claim(app.store, limit=10) == []
    finally:
        conn.close()


def test_a_reused_id_in_a_transaction_is_refused_and_leaves_it_usable(caller: Caller) -> None:
    app = caller.app
    existing = app.tasks["ship"].send(0).id
    conn = caller.connect()
    try:
        caller.order(conn, 7)
        reused = app.tasks["ship"].new_job((7,), {}, job_id=existing)
        with pytest.raises(InvalidArgument, match=f"a job with id '{existing}' already exists"):
            app.store.enqueue_in(conn, [reused])
        kept = app.tasks["ship"].send(8, connection=conn)  # the transaction goes on
        conn.commit()
        assert caller.orders(conn) == 1
        assert app.store.get_job(kept.id) is not None
        assert app.store.get_job(existing).args == [0]  # type: ignore[union-attr]
    finally:
        conn.close()


def test_a_worker_waiting_is_woken_when_the_transaction_commits(caller: Caller) -> None:
    store = caller.app.store
    assert claim(store, limit=1) == []
    store.wait(["default"], 0.01)  # set up to hear: a wake-up from here on reaches it
    woke = threading.Event()

    def waiter() -> None:
        store.wait(["default"], 20.0)
        woke.set()

    conn = caller.connect()
    try:
        caller.order(conn, 4)
        caller.app.tasks["ship"].send(4, connection=conn)
        thread = threading.Thread(target=waiter, daemon=True)
        thread.start()
        assert not woke.wait(0.5)  # nothing committed yet: it sleeps
        started = time.monotonic()
        conn.commit()
        assert woke.wait(10.0)
        assert time.monotonic() - started < caller.wakes_within
        thread.join(10)
    finally:
        conn.close()


def test_an_open_transaction_that_sent_a_job_holds_up_no_other_send(caller: Caller) -> None:
    """A send of another job of the queue and a schedule's fire into it go on
    while the caller's transaction that sent a job is open: they take nothing
    it holds (a queue's row, a fair key's, a wake-up count)."""
    app, store = caller.app, caller.app.store
    store.upsert_schedule(schedule("nightly", next_fire=1_000.0))
    done = threading.Event()
    sent: list[str] = []

    def others() -> None:
        sent.append(app.tasks["ship"].send(2).id)
        fired = new_job(job_id="fired", schedule="nightly", fire_time=1_000.0)
        sent.append(store.fire_schedule("nightly", 1_000.0, 2_000.0, fired))
        done.set()

    conn = caller.connect()
    try:
        caller.order(conn, 1)
        first = app.tasks["ship"].send(1, connection=conn)
        threading.Thread(target=others, daemon=True).start()
        assert done.wait(10), "a send waited for the caller's transaction"
        conn.commit()
        assert sent[1] == "fired"
        # the jobs keep the order they were sent in
        assert [c.id for c in claim(store, limit=10)] == [first.id, sent[0], "fired"]
    finally:
        conn.close()


def test_an_open_transaction_that_sent_a_job_holds_up_no_claim(caller: Caller) -> None:
    """Workers claim the queue's other jobs, and another queue's, while the
    caller's transaction that sent a job is open: the claim skips the row
    it inserted rather than wait for its commit."""
    app, store = caller.app, caller.app.store
    ship = app.tasks["ship"]
    queued = [ship.send(2).id, ship.options(queue="other").send(3).id]
    conn = caller.connect()
    try:
        caller.order(conn, 1)
        pending = ship.send(1, connection=conn)
        claimed: list[list[str]] = []
        worker = threading.Thread(
            target=lambda: claimed.append([c.id for c in claim(store, ["default", "other"], 10)]),
            daemon=True,
        )
        worker.start()
        worker.join(10)
        assert claimed, "a claim waited for the caller's transaction"
        assert sorted(claimed[0]) == sorted(queued)
        conn.commit()
        assert [c.id for c in claim(store, limit=10)] == [pending.id]
    finally:
        conn.close()


def test_a_connection_that_reads_dicts_can_send_in_its_transaction(caller: Caller) -> None:
    conn, cursor_of = caller.dict_reading()
    try:
        caller.order(conn, 3)
        handle = caller.app.tasks["ship"].send(3, connection=conn)
        cursor = cursor_of(conn)
        cursor.execute("SELECT 1 AS one")
        assert cursor.fetchone() == {"one": 1}  # as it was
        conn.commit()
        assert caller.app.store.get_job(handle.id) is not None
    finally:
        conn.close()
