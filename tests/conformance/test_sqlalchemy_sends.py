"""Jobs sent in a SQLAlchemy session's transaction (``connection=session``,
a ``Connection``, or its pooled connection), on PostgreSQL (psycopg) and
MySQL / MariaDB (mysqlclient, PyMySQL, Connector/Python): they appear when the session commits and
never when it rolls back, beside the session's own rows."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sqlalchemy = pytest.importorskip("sqlalchemy")
orm = pytest.importorskip("sqlalchemy.orm")

from backends import drop_store, store_url  # noqa: E402
from conformance.support import claim  # noqa: E402
from rota import App  # noqa: E402
from rota.errors import InvalidArgument  # noqa: E402

#: A store, and the SQLAlchemy driver of the caller's engine on its database.
KINDS = [
    ("postgres", "psycopg"),
    ("mysql", "mysqldb"),
    ("mysql", "pymysql"),
    ("mysql", "mysqlconnector"),
]


@pytest.fixture(params=KINDS, ids=["-".join(kind) for kind in KINDS])
def setup(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[App, Any, str]]:
    """A store, a SQLAlchemy engine on its database, and the caller's table."""
    kind, driver = request.param
    modules = {"mysqldb": "MySQLdb", "mysqlconnector": "mysql.connector"}
    pytest.importorskip(modules.get(driver, driver))
    url = store_url(kind, tmp_path)
    app = App(url)
    app.task(name="ship")(lambda order: order)
    app.store.queues()  # made
    if kind == "postgres":
        schema = url.split("schema=", 1)[1]
        engine = sqlalchemy.create_engine(
            "postgresql+psycopg://" + url.split("://", 1)[1].split("?", 1)[0]
        )
        table = f"public.orders_{schema}"
    else:
        engine = sqlalchemy.create_engine(f"mysql+{driver}://" + url.split("://", 1)[1])
        table = "orders"
    with engine.begin() as conn:
        conn.execute(sqlalchemy.text(f"CREATE TABLE {table} (id INT)"))
    try:
        yield app, engine, table
    finally:
        with engine.begin() as conn:
            conn.execute(sqlalchemy.text(f"DROP TABLE IF EXISTS {table}"))
        engine.dispose()
        app.close()
        drop_store(kind, url)


def _orders(engine: Any, table: str) -> int:
    with engine.connect() as conn:
        return int(conn.execute(sqlalchemy.text(f"SELECT COUNT(*) FROM {table}")).scalar())


def test_a_job_sent_in_a_session_appears_when_it_commits(setup: tuple[App, Any, str]) -> None:
    app, engine, table = setup
    with orm.Session(engine) as session:
        session.execute(sqlalchemy.text(f"INSERT INTO {table} VALUES (1)"))
        handle = app.tasks["ship"].send(1, connection=session)
        assert app.store.get_job(handle.id) is None
        session.commit()
    assert app.store.get_job(handle.id) is not None
    assert [c.id for c in claim(app.store, limit=10)] == [handle.id]
    assert _orders(engine, table) == 1


def test_a_job_sent_in_a_session_that_rolls_back_never_exists(
    setup: tuple[App, Any, str],
) -> None:
    app, engine, table = setup
    with orm.Session(engine) as session:
        session.execute(sqlalchemy.text(f"INSERT INTO {table} VALUES (2)"))
        handles = app.tasks["ship"].send_many([(2,), (3,)], connection=session)
        session.rollback()
    assert app.store.get_jobs([h.id for h in handles]) == [None, None]
    assert _orders(engine, table) == 0


def test_a_core_connection_and_its_pooled_connection_send_too(
    setup: tuple[App, Any, str],
) -> None:
    app, engine, table = setup
    with engine.connect() as conn:
        conn.execute(sqlalchemy.text(f"INSERT INTO {table} VALUES (4)"))
        first = app.tasks["ship"].send(4, connection=conn)
        second = app.tasks["ship"].send(5, connection=conn.connection)
        assert app.store.get_jobs([first.id, second.id]) == [None, None]
        conn.commit()
    assert all(job is not None for job in app.store.get_jobs([first.id, second.id]))


def test_a_send_first_in_engine_begin_is_in_its_transaction(setup: tuple[App, Any, str]) -> None:
    """``engine.begin()`` runs no statement before the first: the send's begins it."""
    app, engine, table = setup
    with engine.begin() as conn:
        handle = app.tasks["ship"].send(6, connection=conn)
        assert app.store.get_job(handle.id) is None
        conn.execute(sqlalchemy.text(f"INSERT INTO {table} VALUES (6)"))
    assert app.store.get_job(handle.id) is not None and _orders(engine, table) == 1
    with pytest.raises(RuntimeError, match="undone"), engine.begin() as conn:
        undone = app.tasks["ship"].send(7, connection=conn)
        raise RuntimeError("undone")
    assert app.store.get_job(undone.id) is None


def test_an_engine_is_refused_with_how_to_send_in_its_transaction(
    setup: tuple[App, Any, str],
) -> None:
    app, engine, _ = setup
    with pytest.raises(InvalidArgument, match=r"not an Engine: `with engine.begin\(\) as conn"):
        app.tasks["ship"].send(8, connection=engine)
    assert claim(app.store, limit=10) == []


def test_a_connection_in_autocommit_is_refused_naming_sqlalchemys_way(
    setup: tuple[App, Any, str],
) -> None:
    """A connection of an engine in AUTOCOMMIT would store the job at once,
    and SQLAlchemy's ``begin()`` opens no database transaction there: the
    refusal names SQLAlchemy's calls, not the driver's."""
    app, engine, _ = setup
    autocommit = engine.execution_options(isolation_level="AUTOCOMMIT")
    postgres = engine.dialect.name == "postgresql"
    refused = pytest.raises(InvalidArgument, match="autocommit")
    with autocommit.connect() as conn, conn.begin(), refused as caught:
        app.tasks["ship"].send(9, connection=conn)
    refused = pytest.raises(InvalidArgument, match="autocommit")
    with orm.Session(autocommit) as session, refused as in_session:
        app.tasks["ship"].send(10, connection=session)
    if postgres:
        for error, kind in ((caught, "Connection"), (in_session, "Session")):
            message = str(error.value)
            assert f"SQLAlchemy {kind} in autocommit mode (isolation_level='AUTOCOMMIT')" in message
            assert "`with engine.begin() as conn:`" in message
            assert "conn.transaction()" not in message
    assert claim(app.store, limit=10) == []
