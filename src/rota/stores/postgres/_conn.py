"""The PostgreSQL dialect of the SQL engine: pooled connections, transactions
that are run again after a deadlock or a dropped connection, migrations under
an advisory lock, and wake-ups by LISTEN/NOTIFY.

Every psycopg error that leaves this layer is a rota error:
:class:`StoreUnavailable` when the server cannot be reached, else
:class:`StoreError` carrying PostgreSQL's message.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

import psycopg
import psycopg_pool
from psycopg import errors as pg_errors

from rota.errors import InvalidArgument, StoreError, StoreUnavailable
from rota.stores.sql.queries import load, migrations
from rota.stores.sql.tx import Changed, Cursor, Database, Params, Tx

log = logging.getLogger("rota.store")
T = TypeVar("T")

#: Every statement of the PostgreSQL store, by name.
Q = load(
    "rota.stores.postgres",
    "connection.sql",
    "jobs.sql",
    "reads.sql",
    "steer.sql",
    "schedules.sql",
    "audit.sql",
    "logs.sql",
    "users.sql",
)
#: A schema name rota accepts: a plain lower-case identifier, used unquoted.
SCHEMA_NAME = re.compile(r"[a-z_][a-z0-9_]{0,47}")
#: Errors after which a transaction is simply run again: PostgreSQL broke a
#: deadlock or a serialization conflict by aborting it.
_RETRYABLE = (pg_errors.DeadlockDetected, pg_errors.SerializationFailure)
_ATTEMPTS = 8


def store_error(exc: BaseException, where: str) -> StoreError:
    """The rota error for a psycopg or pool error at ``where``."""
    if isinstance(exc, psycopg.OperationalError | psycopg_pool.PoolTimeout):
        return StoreUnavailable(f"the PostgreSQL store at {where} cannot be reached: {exc}")
    return StoreError(f"the PostgreSQL store at {where} failed: {exc}")


class PgTx(Tx):
    """A pooled connection of the PostgreSQL store, running its named queries."""

    __slots__ = ("_channel", "_conn", "_now", "_pipeline", "_woken")

    def __init__(
        self, conn: psycopg.Connection[Any], channel: str, pipeline: psycopg.Pipeline | None = None
    ) -> None:
        self._conn = conn
        self._channel = channel
        self._pipeline = pipeline
        self._now: float | None = None
        self._woken = False

    def execute(self, name: str, params: Params = (), where: Sequence[str] = ()) -> Cursor:
        sql = Q[name]
        if "{where}" in sql:
            parts = " AND ".join(Q[fragment] for fragment in where) or Q["no_filter"]
            sql = sql.format(where=parts)
        return _Counted(self._pipeline, [self._conn.execute(sql, params)])

    def executemany(self, name: str, rows: Iterable[Params]) -> Changed:
        sql = Q[name]
        if self._pipeline is None:
            cursor = self._conn.cursor()
            cursor.executemany(sql, list(rows))
            return cursor
        # in the pipeline each statement is queued: none waits for a reply
        return _Counted(self._pipeline, [self._conn.execute(sql, row) for row in rows])

    def rows_in(self, name: str, values: Sequence[Any], params: Sequence[Any] = ()) -> list[Any]:
        if not values:
            return []
        sql = Q[name].format(values="%s")
        return self._conn.execute(sql, (*params, list(values))).fetchall()

    def now(self) -> float:
        """The database's clock, read once per transaction."""
        if self._now is None:
            self._now = float(self._conn.execute(Q["clock"]).fetchone()[0])  # type: ignore[index]
        return self._now

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


class PgConnections(Database):
    """A pool of connections to one schema of one PostgreSQL database."""

    kind = "postgres"

    def __init__(
        self,
        conninfo: str,
        *,
        schema: str = "rota",
        where: str = "",
        pool_size: int = 8,
        replica: bool = False,
    ) -> None:
        if not SCHEMA_NAME.fullmatch(schema):
            raise InvalidArgument(
                f"PostgreSQL schema name {schema!r} is not a plain identifier: use lower-case "
                "letters, digits and underscores, starting with a letter (at most 48)"
            )
        self.schema = schema
        self.where = where or "PostgreSQL"
        self.channel = f"rota_{schema}"
        #: A read-only view on a streaming replica: no migrations, and every
        #: change is refused by the server.
        self.replica = replica
        self._conninfo = conninfo
        self._listeners_guard = threading.Lock()
        self._listeners = threading.local()
        self._all_listeners: list[psycopg.Connection[Any]] = []
        self._outage = False
        self._pool = self._open_pool(conninfo, pool_size)
        if replica:
            return
        try:
            self._migrate()
        except BaseException:
            self.close()
            raise

    def _open_pool(self, conninfo: str, size: int) -> psycopg_pool.ConnectionPool[Any]:
        options = f"-c search_path={self.schema}"
        pool: psycopg_pool.ConnectionPool[Any] = psycopg_pool.ConnectionPool(
            conninfo,
            min_size=1,
            max_size=size,
            kwargs={"autocommit": True, "options": options},
            timeout=30.0,
            open=False,
            name=f"rota-{self.schema}",
        )
        try:
            pool.open(wait=True, timeout=10.0)
        except (psycopg.Error, psycopg_pool.PoolTimeout) as exc:
            pool.close()
            raise store_error(exc, self.where) from None
        return pool

    # -- transactions --------------------------------------------------------

    @contextmanager
    def _write(self) -> Iterator[Tx]:
        try:
            with self._pool.connection() as conn, conn.pipeline() as pipeline, conn.transaction():
                yield PgTx(conn, self.channel, pipeline)
        except (psycopg.Error, psycopg_pool.PoolTimeout) as exc:
            raise store_error(exc, self.where) from exc

    @contextmanager
    def _read(self) -> Iterator[Tx]:
        try:
            with self._pool.connection() as conn:
                yield PgTx(conn, self.channel)
        except (psycopg.Error, psycopg_pool.PoolTimeout) as exc:
            raise store_error(exc, self.where) from exc

    def _transact(self, work: Callable[[Tx], T]) -> T:
        """``work`` in one transaction. It runs again when PostgreSQL aborted
        it to break a deadlock, or when the connection dropped before the
        commit was sent (a server restart leaves the pool's connections
        broken); a connection lost during the commit is an outage, since the
        commit may or may not have happened."""
        for attempt in range(1, _ATTEMPTS + 1):
            committing = False
            try:
                with (
                    self._pool.connection() as conn,
                    conn.pipeline() as pipeline,
                    conn.transaction(),
                ):
                    result = work(PgTx(conn, self.channel, pipeline))
                    committing = True
                if self._outage:
                    self._outage = False
                    log.warning("the PostgreSQL store at %s is reachable again", self.where)
                return result
            except _RETRYABLE:
                if attempt == _ATTEMPTS:
                    raise
                time.sleep(0.005 * attempt)
            except (psycopg.OperationalError, psycopg_pool.PoolTimeout) as exc:
                if committing or attempt == _ATTEMPTS:
                    raise store_error(exc, self.where) from exc
                if not self._outage:
                    self._outage = True
                    log.warning(
                        "lost the PostgreSQL store at %s (%s); reconnecting", self.where, exc
                    )
                time.sleep(min(1.0, 0.05 * 2**attempt))
            except psycopg.Error as exc:
                raise store_error(exc, self.where) from exc
        raise AssertionError("unreachable")

    # -- wake-ups --------------------------------------------------------------

    def _listener(self) -> psycopg.Connection[Any]:
        """This thread's connection that listens for wake-ups (opened lazily)."""
        conn: psycopg.Connection[Any] | None = getattr(self._listeners, "conn", None)
        if conn is None or conn.closed:
            conn = psycopg.connect(self._conninfo, autocommit=True)
            conn.execute(Q["listen"].format(channel=self.channel))
            self._listeners.conn = conn
            with self._listeners_guard:
                self._all_listeners.append(conn)
        return conn

    def _await_wake(self, timeout: float) -> None:
        """Return at the first wake-up since the last one this thread saw, or
        after ``timeout`` seconds. A broken listener is dropped (the next call
        opens another) and counts as a wake-up."""
        try:
            conn = self._listener()
            for _ in conn.notifies(timeout=max(0.0, timeout), stop_after=1):
                break
        except psycopg.Error as exc:
            log.debug("the wake-up listener of %s failed: %s", self.where, exc)
            broken: psycopg.Connection[Any] | None = getattr(self._listeners, "conn", None)
            if broken is not None:
                broken.close()
                self._listeners.conn = None
            time.sleep(min(timeout, 0.5))

    # -- schema ------------------------------------------------------------------

    def _migrate(self) -> None:
        """Bring the schema to the newest version, in one transaction under an
        advisory lock: processes starting at once wait for the first one's
        migration. (Not pipelined: a migration script holds many statements.)"""
        schema = {"schema": self.schema}
        try:
            with self._pool.connection() as conn, conn.transaction():
                conn.execute(Q["migration_lock"], (self.schema,))
                conn.execute(Q["create_schema"].format(**schema))
                conn.execute(Q["create_versions"].format(**schema))
                row = conn.execute(Q["schema_version"].format(**schema)).fetchone()
                version = int(row[0]) if row else 0
                for number, script in migrations("rota.stores.postgres"):
                    if number > version:
                        conn.execute(script)
                        conn.execute(Q["record_version"].format(**schema), (number,))
        except (psycopg.Error, psycopg_pool.PoolTimeout) as exc:
            raise store_error(exc, self.where) from exc

    def close(self) -> None:
        """Close the pools and this store's listeners."""
        for conn in self._all_listeners:
            conn.close()
        self._all_listeners.clear()
        self._pool.close()
