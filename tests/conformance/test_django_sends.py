"""Jobs sent in a Django transaction (``connection=django.db.connection`` or
``connections["alias"]`` inside ``transaction.atomic()``), on PostgreSQL
(Django on psycopg 3) and MySQL / MariaDB (Django on mysqlclient): they
appear when the atomic block commits and never when it, or the savepoint of
a nested one, rolls back. Outside any atomic block Django's connection is in
autocommit mode, and the send is refused, as with a driver's connection in
autocommit.

Django is configured once per process, with no project: alias ``default`` on
the PostgreSQL database the stores use (each test's store is a schema of its
own), alias ``mysql`` on a database made for this module (each test's store
is another database of the server)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

django = pytest.importorskip("django")

from django.conf import settings  # noqa: E402
from django.db import connections, transaction  # noqa: E402
from django.utils.connection import ConnectionProxy  # noqa: E402

from backends import MYSQL_URL, POSTGRES_URL, drop_store, store_url  # noqa: E402
from conformance.support import claim  # noqa: E402
from rota import App  # noqa: E402
from rota.errors import InvalidArgument  # noqa: E402

#: A store's kind, and the Django alias of a connection to its server.
ALIASES = {"postgres": "default", "mysql": "mysql"}


def _database(url: str, engine: str, name: str) -> dict[str, Any]:
    parts = urlsplit(url)
    return {
        "ENGINE": f"django.db.backends.{engine}",
        "NAME": name,
        "USER": parts.username or "",
        "PASSWORD": parts.password or "",
        "HOST": parts.hostname or "",
        "PORT": str(parts.port or ""),
    }


@pytest.fixture(scope="module")
def django_databases() -> Iterator[None]:
    """Django set up on both servers (reachable, else skipped, or failed in CI)."""
    store_url("postgres", Path())  # (only checks that the server answers)
    my_url = store_url("mysql", Path())  # a database of its own, for Django's alias
    if not settings.configured:
        settings.configure(
            DATABASES={
                "default": _database(POSTGRES_URL, "postgresql", urlsplit(POSTGRES_URL).path[1:]),
                "mysql": _database(MYSQL_URL, "mysql", urlsplit(my_url).path[1:]),
            },
            USE_TZ=True,
        )
        django.setup()
    try:
        yield
    finally:
        connections.close_all()
        drop_store("mysql", my_url)


@dataclass
class Setup:
    """A store, the Django alias on its server, and the caller's table there."""

    app: App
    alias: str
    table: str

    def insert(self, order: int) -> None:
        with connections[self.alias].cursor() as cursor:
            cursor.execute(f"INSERT INTO {self.table} VALUES (%s)", [order])

    def orders(self) -> list[int]:
        with connections[self.alias].cursor() as cursor:
            cursor.execute(f"SELECT id FROM {self.table} ORDER BY id")
            return [row[0] for row in cursor.fetchall()]


@pytest.fixture(params=list(ALIASES))
def setup(
    request: pytest.FixtureRequest, tmp_path: Path, django_databases: None
) -> Iterator[Setup]:
    kind = request.param
    url = store_url(kind, tmp_path)
    app = App(url)
    app.task(name="ship")(lambda order: order)
    app.store.queues()  # made
    alias = ALIASES[kind]
    table = f"orders_{uuid.uuid4().hex[:12]}"
    with connections[alias].cursor() as cursor:
        cursor.execute(f"CREATE TABLE {table} (id INT)")
    try:
        yield Setup(app, alias, table)
    finally:
        with connections[alias].cursor() as cursor:
            cursor.execute(f"DROP TABLE IF EXISTS {table}")
        app.close()
        drop_store(kind, url)


def test_a_job_sent_in_atomic_appears_when_it_commits(setup: Setup) -> None:
    app = setup.app
    with transaction.atomic(using=setup.alias):
        setup.insert(1)
        handle = app.tasks["ship"].send(1, connection=connections[setup.alias])
        later = app.tasks["ship"].send_in(60, 2, connection=connections[setup.alias])
        assert app.store.get_jobs([handle.id, later.id]) == [None, None]  # not yet committed
    assert all(job is not None for job in app.store.get_jobs([handle.id, later.id]))
    assert [c.id for c in claim(app.store, limit=10)] == [handle.id]
    assert setup.orders() == [1]


def test_the_proxy_django_db_connection_sends_as_its_connection(setup: Setup) -> None:
    """``django.db.connection`` is ``ConnectionProxy(connections, "default")``."""
    app = setup.app
    proxy = ConnectionProxy(connections, setup.alias)
    with transaction.atomic(using=setup.alias):
        handles = app.tasks["ship"].send_many([(3,), (4,)], connection=proxy)
        setup.insert(3)
    assert all(job is not None for job in app.store.get_jobs([h.id for h in handles]))
    if setup.alias == "default":
        from django.db import connection

        with transaction.atomic():
            handle = app.tasks["ship"].send(5, connection=connection)
        assert app.store.get_job(handle.id) is not None


def test_a_job_sent_in_atomic_that_raises_never_exists(setup: Setup) -> None:
    app = setup.app
    with pytest.raises(RuntimeError, match="undone"), transaction.atomic(using=setup.alias):
        setup.insert(6)
        handle = app.tasks["ship"].send(6, connection=connections[setup.alias])
        raise RuntimeError("undone")
    assert app.store.get_job(handle.id) is None
    assert claim(app.store, limit=10) == []
    assert setup.orders() == []


def test_a_nested_atomic_that_raises_takes_its_job_back_with_its_savepoint(
    setup: Setup,
) -> None:
    app = setup.app
    connection = connections[setup.alias]
    with transaction.atomic(using=setup.alias):
        setup.insert(7)
        kept = app.tasks["ship"].send(7, connection=connection)
        with pytest.raises(RuntimeError), transaction.atomic(using=setup.alias):
            setup.insert(8)
            undone = app.tasks["ship"].send(8, connection=connection)
            raise RuntimeError("undone")
        after = app.tasks["ship"].send(9, connection=connection)  # the transaction goes on
    assert app.store.get_job(undone.id) is None
    assert {c.id for c in claim(app.store, limit=10)} == {kept.id, after.id}
    assert setup.orders() == [7]


def test_outside_atomic_a_send_is_refused_as_in_autocommit(setup: Setup) -> None:
    """Django runs in autocommit outside ``atomic()``: as with a driver's
    connection in autocommit, the send is refused (its job would be stored
    at once), saying how to send; the connection goes on."""
    app = setup.app
    connection = connections[setup.alias]
    connection.close()  # (not yet connected: the send connects to ask)
    with pytest.raises(InvalidArgument, match=r"autocommit mode \(outside transaction.atomic"):
        app.tasks["ship"].send(10, connection=connection)
    assert connection.get_autocommit()
    assert claim(app.store, limit=10) == []
    setup.insert(10)  # stored at once, as Django's statements are
    assert setup.orders() == [10]
    handle = app.tasks["ship"].send(10)  # without connection=: stored at once
    assert [c.id for c in claim(app.store, limit=10)] == [handle.id]


def test_an_atomic_block_marked_for_rollback_is_refused(setup: Setup) -> None:
    app = setup.app
    with transaction.atomic(using=setup.alias):
        transaction.set_rollback(True, using=setup.alias)
        with pytest.raises(InvalidArgument, match="marked for rollback"):
            app.tasks["ship"].send(11, connection=connections[setup.alias])
    assert claim(app.store, limit=10) == []


class _Psycopg2Connection:
    """Stands for psycopg2's connection type (``psycopg2.extensions.connection``)."""


_Psycopg2Connection.__module__ = "psycopg2.extensions"


class _Psycopg2Wrapper:
    """The parts of a Django ``DatabaseWrapper`` on psycopg2 that a send reads
    (Django before 4.2 had only psycopg2)."""

    alias = "default"
    vendor = "postgresql"
    settings_dict: dict[str, Any] = {"ENGINE": "django.db.backends.postgresql"}
    needs_rollback = False
    connection = _Psycopg2Connection()

    def ensure_connection(self) -> None:
        pass

    def get_autocommit(self) -> bool:
        return False


def test_a_django_connection_on_psycopg2_is_refused_naming_psycopg_3(tmp_path: Path) -> None:
    app = App(f"sqlite:///{tmp_path / 'rota.db'}")
    ship = app.task(name="ship")(lambda order: order)
    with pytest.raises(InvalidArgument, match="on psycopg2, but rota sends in a transaction of"):
        ship.send(12, connection=_Psycopg2Wrapper())
