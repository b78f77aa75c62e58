"""One transaction of the PostgreSQL store on one connection (:class:`PgTx`),
and what psycopg's errors mean to rota (:func:`store_error`).

The statements are the store's named queries (``queries/*.sql``); in a write
transaction they are queued in psycopg's pipeline, so that none waits for a
reply until one is read (see :class:`_Counted`). The connections, their
pool, retries and migrations are :mod:`rota.stores.postgres._conn`'s.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import psycopg
import psycopg_pool

from rota.errors import StoreError, StoreUnavailable, ValueRefused
from rota.stores.postgres._outages import connection_lost
from rota.stores.sql.queries import ENGINE_FILES, load
from rota.stores.sql.tx import Changed, Cursor, Params, Refused, Tx

#: The package of this store's queries and migrations.
PACKAGE = "rota.stores.postgres"
#: Every statement of the PostgreSQL store, by name.
Q = load(PACKAGE, "connection.sql", *ENGINE_FILES)

#: What a reachable server did, by SQLSTATE (or its class: the first two
#: characters), where trying again later may succeed: raised as
#: :class:`StoreUnavailable`.
_TRANSIENT = {
    "40001": "rolled back a transaction that conflicted with a concurrent one",
    "40P01": "rolled back a transaction to break a deadlock",
    "55P03": "did not grant a lock in time (lock_timeout)",
    "57014": "cancelled a statement (statement_timeout, or cancelled by an operator)",
    "53": "is short of resources (disk, memory or connections)",
}
#: What a reachable server refused, where trying again changes nothing.
_REFUSED = {
    "42501": "refused for want of a right",
    "25006": "is read-only and refused a change",
}


#: The server's words (its log-in errors carry no SQLSTATE) for a connection
#: it refused whatever the time: a wrong password, an unknown role or
#: database, a role that may not log in, no pg_hba.conf entry.
_LOGIN_REFUSED = re.compile(
    r"FATAL:\s+(password authentication failed|role .* does not exist|database .* does not "
    r"exist|role .* is not permitted to log in|no pg_hba\.conf entry|permission denied for "
    r"database)"
)


#: libpq's words for connection settings that can never work with this
#: server, whatever the time: a value it does not know, SSL or channel
#: binding required of a server that offers neither.
_BAD_SETTING = re.compile(
    r"invalid \w+ value|server does not support SSL, but SSL was required|channel binding "
    r"required, but"
)


def lacks_rights(where: str, role: str, schema: str, said: Exception) -> StoreError:
    """The error of a role that may not use rota's tables in ``schema``,
    with the rights to grant it."""
    return StoreError(
        f"the PostgreSQL store at {where}: role {role} may not use rota's tables in schema "
        f"{schema}: GRANT USAGE ON SCHEMA {schema} TO {role}, and SELECT, INSERT, UPDATE, "
        f"DELETE ON ALL TABLES IN SCHEMA {schema} TO {role} (PostgreSQL said: {said})"
    )


def store_error(exc: BaseException, where: str) -> StoreError:
    """The rota error for a psycopg or pool error at ``where``: a lost
    connection (or no connection in time) is "cannot be reached", a log-in
    the server refused is "refused the connection", a connection setting
    that cannot work with it (``sslmode=bogus``) says so; other server errors say
    what the server did, by SQLSTATE."""
    if _LOGIN_REFUSED.search(str(exc)):
        return StoreError(f"the PostgreSQL store at {where} refused the connection: {exc}")
    if _BAD_SETTING.search(str(exc)):
        return StoreError(
            f"the PostgreSQL store at {where} cannot work with a connection setting: {exc}"
        )
    if isinstance(exc, psycopg_pool.PoolTimeout) or connection_lost(exc):
        return StoreUnavailable(f"the PostgreSQL store at {where} cannot be reached: {exc}")
    if isinstance(exc, psycopg.IntegrityError):  # pipelined: raised at the commit
        return Refused(f"the PostgreSQL store at {where} refused a row: {exc}")
    if isinstance(exc, psycopg.DataError):
        return ValueRefused(f"the PostgreSQL store at {where} refused a value: {exc}")
    state = getattr(exc, "sqlstate", None) or ""
    transient = _TRANSIENT.get(state) or _TRANSIENT.get(state[:2])
    if transient is not None:
        return StoreUnavailable(f"the PostgreSQL store at {where} {transient}: {exc}")
    refused = _REFUSED.get(state, "failed")
    return StoreError(f"the PostgreSQL store at {where} {refused}: {exc}")


class PgTx(Tx):
    """A pooled connection of the PostgreSQL store, running its named queries."""

    __slots__ = ("_channel", "_conn", "_identity", "_now", "_opening", "_pipeline", "_woken")

    def __init__(
        self,
        conn: psycopg.Connection[Any],
        channel: str,
        pipeline: psycopg.Pipeline | None = None,
        opening: psycopg.Cursor[Any] | None = None,
    ) -> None:
        self._conn = conn
        self._channel = channel
        self._pipeline = pipeline
        #: The reply to ``transaction_id``, sent first in a write transaction.
        self._opening = opening
        self._identity: tuple[Any, ...] | None = None
        self._now: float | None = None
        self._woken = False

    def execute(self, name: str, params: Params = (), where: Sequence[str] = ()) -> Cursor:
        sql = Q[name]
        if "{where}" in sql:
            parts = " AND ".join(Q[fragment] for fragment in where) or Q["no_filter"]
            sql = sql.format(where=parts)
        return _Counted(self._pipeline, [self._conn.execute(sql, params)])

    def executemany(self, name: str, rows: Iterable[Params]) -> Changed:
        rows = list(rows)
        columns = Q.get(f"{name}_columns")
        if columns is not None and len(rows) > 1:  # one statement, one array per column
            arrays = [list(column) for column in zip(*rows, strict=True)]
            return _Counted(self._pipeline, [self._conn.execute(columns, arrays)])
        sql = Q[name]
        if self._pipeline is None:
            cursor = self._conn.cursor()
            cursor.executemany(sql, rows)
            return cursor
        # in the pipeline each statement is queued: none waits for a reply
        return _Counted(self._pipeline, [self._conn.execute(sql, row) for row in rows])

    def first_rows(self, name: str, rows: Iterable[Params]) -> list[Any]:
        sent = [self.execute(name, params) for params in rows]  # queued in the pipeline
        return [cursor.fetchone() for cursor in sent]

    def rows_in(self, name: str, values: Sequence[Any], params: Sequence[Any] = ()) -> list[Any]:
        if not values:
            return []
        sql = Q[name].format(values="%s")
        return self._conn.execute(sql, (*params, list(values))).fetchall()

    def rows_in_later(
        self, name: str, values: Sequence[Any], params: Sequence[Any] = ()
    ) -> Callable[[], list[Any]]:
        if not values:
            return list
        reply = self._conn.execute(Q[name].format(values="%s"), (*params, list(values)))

        def rows() -> list[Any]:
            try:
                return reply.fetchall()
            except psycopg.Error as exc:  # committed, but its reply lost with the connection
                raise StoreUnavailable(
                    f"the connection to the PostgreSQL store was lost before the rows of "
                    f"{name} were received (the transaction committed): {exc}"
                ) from exc

        return rows

    def now(self) -> float:
        """The database's clock, read once per transaction (with the
        transaction's id where it was asked for)."""
        if self._now is None:
            if self._opening is not None:
                self._identity = tuple(self._opening.fetchone())  # type: ignore[arg-type]
                self._now = float(self._identity[2])
            else:
                self._now = float(self._conn.execute(Q["clock"]).fetchone()[0])  # type: ignore[index]
        return self._now

    def now_after_locks(self) -> float:
        self.now()  # the transaction's opening reply is read first
        self._now = float(self._conn.execute(Q["clock_again"]).fetchone()[0])  # type: ignore[index]
        return self._now

    def identity(self) -> tuple[Any, ...] | None:
        """The transaction's id, its server's start time and the clock, once
        they were received (asking never waits for the server), or None."""
        if self._identity is None and self._opening is not None:
            self._identity = _received(self._opening)
        return self._identity

    def is_constraint_error(self, exc: BaseException) -> bool:
        return isinstance(exc, psycopg.IntegrityError)

    def wake(self) -> None:
        """NOTIFY the store's channel in this transaction: PostgreSQL delivers
        it to the listening workers at commit, and never after a rollback."""
        if not self._woken:
            self._woken = True
            self._conn.execute(Q["notify"], (self._channel,))


class _Counted:
    """The cursors of statements sent in a pipeline: reading ``rowcount``
    first collects the replies the pipeline has pending; rows are read from
    the last statement."""

    __slots__ = ("_cursors", "_pipeline")

    def __init__(
        self, pipeline: psycopg.Pipeline | None, cursors: list[psycopg.Cursor[Any]]
    ) -> None:
        self._pipeline = pipeline
        self._cursors = cursors

    @property
    def rowcount(self) -> int:
        if self._pipeline is not None:
            self._pipeline.sync()
        return sum(cursor.rowcount for cursor in self._cursors)

    def fetchone(self) -> Any:
        return self._cursors[-1].fetchone()

    def fetchall(self) -> list[Any]:
        return self._cursors[-1].fetchall()

    def __iter__(self) -> Iterator[Any]:
        return iter(self._cursors[-1])


def _received(reply: psycopg.Cursor[Any] | None) -> tuple[Any, ...] | None:
    """The row a queued statement returned, if its reply has come (reading
    it never waits for the server)."""
    if reply is None or reply.pgresult is None:
        return None
    row = reply.fetchone()
    return None if row is None else tuple(row)
