"""One transaction of the MySQL / MariaDB store on one connection
(:class:`MySQLTx`), and what the driver's errors mean to rota
(:func:`store_error`).

Neither database has ``UPDATE ... RETURNING``: a named query may hold several
statements, which :class:`MySQLTx` sends in one round trip (see
``queries/connection.sql`` for how they share the parameters). The
connections, their pool, retries and migrations are
:mod:`rota.stores.mysql._conn`'s.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from functools import lru_cache
from typing import Any, cast

import MySQLdb
from MySQLdb.cursors import RE_INSERT_VALUES
from MySQLdb.cursors import Cursor as TupleCursor

from rota.errors import StoreError, StoreUnavailable, ValueRefused
from rota.stores.sql.queries import ENGINE_FILES, load
from rota.stores.sql.tx import Changed, Cursor, Params, Tx

#: The package of this store's queries and migrations.
PACKAGE = "rota.stores.mysql"
#: Every statement of the MySQL store, by name.
Q = load(PACKAGE, "connection.sql", *ENGINE_FILES)

#: Errors that mean the connection or the server went away: the client lost
#: the server (2002, 2003, 2006, 2013, 2055), the server is shutting down
#: (1053), killed the connection (1927) or closed it for inactivity (4031),
#: or has no connection left (1040).
_LOST = frozenset({2002, 2003, 2006, 2013, 2055, 1053, 1927, 4031, 1040})
#: The server refused a log-in whatever the time: access denied (1045, to a
#: database 1044, by a plugin 1698), an account locked (3118) or whose
#: password expired (1862).
_LOGIN_REFUSED = frozenset({1045, 1044, 1698, 3118, 1862})
_SERVER_LOST = 2013  # CR_SERVER_LOST: the connection went away during a statement
#: The server refused a statement because it is read-only (1290: --read-only,
#: 1792: a read-only transaction).
READ_ONLY = frozenset({1290, 1792})
_CHUNK = 1000  # values per IN (...) list
_BATCH = 64  # statements of an executemany per round trip
#: The end of one statement of a query or a migration script.
STATEMENT_END = re.compile(r";[ \t]*\n")
_PLACEHOLDER = re.compile(r"(?<!%)%s")


def error_code(exc: BaseException) -> int | None:
    """The MySQL error number of a driver error (None for other errors)."""
    if isinstance(exc, MySQLdb.Error) and exc.args and isinstance(exc.args[0], int):
        return exc.args[0]
    return None


def connection_lost(exc: BaseException) -> bool:
    """Whether ``exc`` says the connection or the server went away."""
    return error_code(exc) in _LOST


def ended_connection(exc: MySQLdb.Error) -> MySQLdb.OperationalError:
    """A lost-connection error for ``exc``, raised by a statement on a
    connection that turned out to be gone: a server ending a connection in
    the middle of a statement may first answer with an unrelated error
    (MariaDB has answered a ``KILL CONNECTION`` with a parse error)."""
    return MySQLdb.OperationalError(_SERVER_LOST, f"the server ended the connection: {exc}")


def store_error(exc: BaseException, where: str) -> StoreError:
    """The rota error for a driver error at ``where``."""
    if connection_lost(exc):
        return StoreUnavailable(f"the MySQL store at {where} cannot be reached: {exc}")
    if isinstance(exc, MySQLdb.DataError):
        return ValueRefused(f"the MySQL store at {where} refused a value: {exc}")
    if error_code(exc) in _LOGIN_REFUSED:
        said = exc.args[1] if len(exc.args) > 1 else exc
        return StoreError(f"the MySQL store at {where} refused the connection: {said}")
    if error_code(exc) in READ_ONLY:
        return StoreError(f"the MySQL store at {where} is read-only and refused a change: {exc}")
    return StoreError(f"the MySQL store at {where} failed: {exc}")


@lru_cache(maxsize=1024)
def _placeholders(sql: str) -> tuple[int, ...]:
    """The number of ``%s`` in each statement of ``sql``."""
    return tuple(len(_PLACEHOLDER.findall(part)) for part in STATEMENT_END.split(sql))


def _arguments(sql: str, params: Params) -> Params | None:
    """The parameters of ``sql``: each statement takes the last of ``params``,
    as many as it has placeholders (a mapping is shared by all)."""
    if isinstance(params, Mapping):
        return params
    args: list[Any] = []
    for count in _placeholders(sql):
        if count:
            args += params[len(params) - count :]
    return args or None


class _Rows:
    """The outcome of a query of several statements: the rows of the last
    statement that returned rows (``rowcount``: how many), or, when none did,
    the rows the statements changed."""

    __slots__ = ("_rows", "rowcount")

    def __init__(self, cursor: Any) -> None:
        rows: list[Any] | None = None
        changed = 0
        while True:
            if cursor.description is not None:
                rows = list(cursor.fetchall())
            else:
                changed += max(0, cursor.rowcount)
            if not cursor.nextset():
                break
        self._rows = rows or []
        self.rowcount = changed if rows is None else len(rows)

    def fetchone(self) -> Any:
        return self._rows[0] if self._rows else None

    def fetchall(self) -> list[Any]:
        return self._rows

    def __iter__(self) -> Iterator[Any]:
        return iter(self._rows)


class MySQLTx(Tx):
    """A pooled connection of the MySQL store, running its named queries."""

    __slots__ = ("_conn", "_now", "woken")

    def __init__(self, conn: Any) -> None:
        self._conn = conn
        self._now: float | None = None
        #: Whether this transaction makes work claimable (bumps the wake-up
        #: count as it commits).
        self.woken = False

    def execute(self, name: str, params: Params = (), where: Sequence[str] = ()) -> Cursor:
        sql = Q[name]
        if "{where}" in sql:
            sql = sql.format(where=" AND ".join(Q[part] for part in where) or Q["no_filter"])
        return self.run(sql, params)

    def _cursor(self) -> Any:
        """A cursor that reads rows as tuples (a caller's connection may read dicts)."""
        return self._conn.cursor(TupleCursor)

    def run(self, sql: str, params: Params = ()) -> Cursor:
        """Run ``sql``, one statement or several in one round trip."""
        cursor = self._cursor()
        cursor.execute(sql, _arguments(sql, params))
        if len(_placeholders(sql)) == 1:
            return cast(Cursor, cursor)
        return _Rows(cursor)

    def executemany(self, name: str, rows: Iterable[Params]) -> Changed:
        rows = list(rows)
        sql = Q[name]
        cursor = self._cursor()
        if not rows:
            return _Count(0)
        if RE_INSERT_VALUES.match(sql):
            cursor.executemany(sql, rows)  # one multi-row INSERT
            return _Count(max(0, cursor.rowcount))
        # any other statement: a batch of copies of it per round trip
        # (the driver's executemany would send one round trip per row)
        changed = 0
        for start in range(0, len(rows), _BATCH):
            batch = rows[start : start + _BATCH]
            cursor.execute(";\n".join([sql] * len(batch)), [v for row in batch for v in row])
            changed += _Rows(cursor).rowcount
        return _Count(changed)

    def first_rows(self, name: str, rows: Iterable[Params]) -> list[Any]:
        # copies of the query, _BATCH to a round trip (as executemany); a
        # copy's row is the first of its last statement that returns rows
        sql, rows = Q[name], list(rows)
        statements = len(_placeholders(sql))
        cursor = self._cursor()
        found: list[Any] = []
        for start in range(0, len(rows), _BATCH):
            batch = rows[start : start + _BATCH]
            args = [v for params in batch for v in _arguments(sql, params) or ()]
            cursor.execute(";\n".join([sql] * len(batch)), args)
            for _copy in batch:
                first = None
                for _statement in range(statements):
                    if cursor.description is not None:
                        first = next(iter(cursor.fetchall()), None)
                    cursor.nextset()
                found.append(first)
        return found

    def rows_in(self, name: str, values: Sequence[Any], params: Sequence[Any] = ()) -> list[Any]:
        rows: list[Any] = []
        for start in range(0, len(values), _CHUNK):
            chunk = values[start : start + _CHUNK]
            sql = Q[name].format(values=", ".join(["%s"] * len(chunk)))
            rows += self.run(sql, (*params, *chunk)).fetchall()
        return rows

    def now(self) -> float:
        """The database's clock, read once per transaction."""
        if self._now is None:
            self._now = float(self.execute("clock").fetchone()[0])
        return self._now

    def now_after_locks(self) -> float:
        self._now = float(self.execute("clock").fetchone()[0])
        return self._now

    def is_constraint_error(self, exc: BaseException) -> bool:
        return isinstance(exc, MySQLdb.IntegrityError)

    def wake(self) -> None:
        """Bump the wake-up count when this transaction commits."""
        self.woken = True

    def commit(self) -> None:
        """Commit, bumping the wake-up count in the same round trip if asked."""
        self.execute("wake_and_commit" if self.woken else "commit")


class _Count:
    __slots__ = ("rowcount",)

    def __init__(self, rowcount: int) -> None:
        self.rowcount = rowcount
