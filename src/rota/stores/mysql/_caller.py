"""Sending jobs in the caller's own MySQL transaction: which connections can,
and the session the store's statements run in there.

The caller's connection is a mysqlclient (``MySQLdb``), PyMySQL or MySQL
Connector/Python (``mysql.connector``) connection to the store's server, in
a transaction: one begun explicitly, or any statement on a connection that
is not in autocommit mode (the drivers' default). The other drivers' errors
are raised as mysqlclient's of the same PEP 249 name and server code, which
is what the store reads. For the
send, its session takes the store's database (``USE``), clock (UTC) and
value checks (strict mode), and gets its own back after; its isolation level
stays the caller's. The jobs go in within a savepoint, so a send the store
refuses leaves the caller's transaction as it was.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import MySQLdb

from rota import _validate
from rota.errors import InvalidArgument
from rota.stores.mysql._tx import MySQLTx, Q, error_code
from rota.stores.sql.tx import Changed, Cursor, Params

__all__ = ["caller_tx", "in_store_session", "savepoint"]

#: ``@@in_transaction`` is MariaDB's: MySQL answers "unknown system variable".
_UNKNOWN_VARIABLE = 1193


def caller_tx(connection: Any) -> MySQLTx:
    """The store's statements on the caller's ``connection``; refuses, with
    the reason, a connection a send cannot use."""
    if isinstance(connection, MySQLdb.connections.Connection):
        tx, is_open = MySQLTx(connection), connection.open
    elif _is_pymysql(connection):
        tx, is_open = PyMySQLTx(connection), connection.open
    elif _is_connector(connection):
        tx, is_open = ConnectorTx(connection), connection.is_connected()  # (it pings)
    else:
        raise InvalidArgument(
            f"connection must be a mysqlclient (MySQLdb), PyMySQL or MySQL Connector/Python "
            f"connection, not {_validate.type_name(connection)} (with SQLAlchemy: a Session or "
            "Connection of an engine on mysql+mysqldb://, mysql+pymysql:// or "
            "mysql+mysqlconnector://)"
        )
    if not is_open:
        raise InvalidArgument(
            "connection is closed: send in an open transaction of an open connection"
        )
    return tx


def _is_pymysql(connection: Any) -> bool:
    pymysql = sys.modules.get("pymysql")  # (imported by whoever made the connection)
    return pymysql is not None and isinstance(connection, pymysql.connections.Connection)


def _is_connector(connection: Any) -> bool:
    abstracts = sys.modules.get("mysql.connector.abstracts")
    return abstracts is not None and isinstance(connection, abstracts.MySQLConnectionAbstract)


class _OtherDriverTx(MySQLTx):
    """:class:`MySQLTx` on a connection of another driver than mysqlclient,
    whose errors it raises as mysqlclient's of the same PEP 249 name, with
    the server's code and message as their arguments."""

    __slots__ = ()

    def _error_of(self, exc: BaseException) -> tuple[int, str] | None:
        """The server's code and message of one of the driver's errors; None
        for an exception of another kind."""
        raise NotImplementedError

    @contextmanager
    def _as_mysqlclient_errors(self) -> Iterator[None]:
        try:
            yield
        except Exception as exc:
            said = self._error_of(exc)
            if said is None:
                raise
            kind = getattr(MySQLdb, type(exc).__name__, MySQLdb.Error)
            raise kind(*said) from exc

    def run(self, sql: str, params: Params = ()) -> Cursor:
        with self._as_mysqlclient_errors():
            return super().run(sql, params)

    def executemany(self, name: str, rows: Iterable[Params]) -> Changed:
        with self._as_mysqlclient_errors():
            return super().executemany(name, rows)

    def first_rows(self, name: str, rows: Iterable[Params]) -> list[Any]:
        with self._as_mysqlclient_errors():
            return super().first_rows(name, rows)


class PyMySQLTx(_OtherDriverTx):
    """:class:`MySQLTx` on a PyMySQL connection."""

    __slots__ = ()

    def _cursor(self) -> Any:
        return self._conn.cursor(sys.modules["pymysql"].cursors.Cursor)

    def _error_of(self, exc: BaseException) -> tuple[int, str] | None:
        if not isinstance(exc, sys.modules["pymysql"].err.MySQLError):
            return None
        args = exc.args  # (code, message) from the server; a client error may say less
        if len(args) >= 2 and isinstance(args[0], int):
            return args[0], str(args[1])
        return 0, str(exc)


class ConnectorTx(_OtherDriverTx):
    """:class:`MySQLTx` on a MySQL Connector/Python connection."""

    __slots__ = ()

    def _cursor(self) -> Any:
        # buffered: the driver refuses a statement while rows of the last are unread
        return self._conn.cursor(buffered=True, dictionary=False)

    def _error_of(self, exc: BaseException) -> tuple[int, str] | None:
        if not isinstance(exc, sys.modules["mysql.connector"].Error):
            return None
        return exc.errno or 0, exc.msg


@contextmanager
def in_store_session(tx: MySQLTx, database: str) -> Iterator[None]:
    """Run the block in the store's session settings on the caller's
    connection of ``tx``, in its open transaction; put the caller's back."""
    current, mode, zone, autocommit = tx.execute("caller_session").fetchone()
    if not isinstance(mode, str):
        raise InvalidArgument(
            "connection reads raw values (Connector/Python's raw=True), which the "
            "store cannot: send on a connection made without raw=True"
        )
    if autocommit and not _in_transaction(tx):
        raise InvalidArgument(
            "connection has no open transaction: it is in autocommit mode; begin one "
            "(connection.begin(), or START TRANSACTION), or turn autocommit off"
        )
    if current is None:
        raise InvalidArgument(
            "connection has no current database: connect with a database (any: the "
            f"store's tables are in {database!r})"
        )
    tx.execute("store_settings")
    if current != database:
        tx.run(Q["use_database"].format(database=database))
    try:
        yield
    finally:
        if current != database:
            tx.run(Q["use_database"].format(database=current.replace("`", "``")))
        tx.execute("caller_settings", (mode, zone))


@contextmanager
def savepoint(tx: MySQLTx) -> Iterator[None]:
    """The block in a savepoint: undone, and the transaction usable, when it raises."""
    tx.execute("savepoint")
    try:
        yield
    except BaseException:
        tx.execute("rollback_to_savepoint")
        raise
    tx.execute("release_savepoint")


def _in_transaction(tx: MySQLTx) -> bool:
    """Whether a connection in autocommit mode has begun a transaction;
    False where the server cannot tell (MySQL)."""
    try:
        return bool(tx.execute("in_transaction").fetchone()[0])
    except MySQLdb.OperationalError as exc:
        if error_code(exc) == _UNKNOWN_VARIABLE:
            return False
        raise
