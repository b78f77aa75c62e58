"""The PostgreSQL store: rota on a database many teams already run.

The SQL engine (``rota.stores.sql``) on the PostgreSQL dialect. Claims lock
the rows they take with ``FOR UPDATE SKIP LOCKED``, so any number of workers
claim side by side; limit keys are rows locked by the transaction that
admits or frees through them; idle workers sleep on LISTEN/NOTIFY; the
database's clock is the store clock. Each app lives in a schema of its own
(``?schema=NAME``, default ``rota``), created and migrated on first use.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

import psycopg
from psycopg import errors as pg_errors
from psycopg.rows import tuple_row

from rota import _validate
from rota.errors import InvalidArgument, StoreError
from rota.models import ANY_HOST, ClaimedJob, EnqueueResult, HostScope, NewJob
from rota.stores import _checks
from rota.stores.base import Store
from rota.stores.postgres._conn import PgConnections
from rota.stores.postgres._tx import PgTx, lacks_rights, store_error
from rota.stores.sql.audit import Audit
from rota.stores.sql.jobs import Jobs
from rota.stores.sql.logs import Logs
from rota.stores.sql.reads import Reads
from rota.stores.sql.schedules import Schedules
from rota.stores.sql.steer import Steering
from rota.stores.sql.tx import Refused
from rota.stores.sql.users import Users

#: URL options rota reads itself; every other one goes to libpq (sslmode, ...).
#: ``read_url`` names a read replica for the app (see ``rota.stores.open_replica``).
_OWN_OPTIONS = ("schema", "pool_size", "read_url")


class PostgresStore(Jobs, Reads, Steering, Schedules, Audit, Users, Logs, PgConnections, Store):
    """A :class:`~rota.stores.base.Store` on PostgreSQL
    (``postgresql://user:pass@host:port/db?schema=NAME``)."""

    kind = "postgres"
    orders_debug_queues = True
    pages_queues_apart = True

    @classmethod
    def from_url(cls, url: str, *, replica: bool = False, create: bool = True) -> PostgresStore:
        """The store a ``postgresql://`` (or ``postgres://``) URL names; with
        ``replica``, a read-only view on a streaming replica of it (the URL
        names the replica server, and the schema the primary's). ``create``:
        False refuses (:class:`StoreError`) a schema without rota's tables
        rather than create them."""
        conninfo, options = split_url(url)
        try:
            fields = psycopg.conninfo.conninfo_to_dict(conninfo)  # libpq's own check of the rest
        except psycopg.ProgrammingError as exc:
            raise InvalidArgument(f"bad PostgreSQL URL: {str(exc).strip()}") from None
        try:
            pool_size = int(options.get("pool_size", "8"))
        except ValueError:
            raise InvalidArgument("pool_size must be a whole number") from None
        if not 1 <= pool_size <= 100:
            raise InvalidArgument(f"pool_size must be between 1 and 100, not {pool_size}")
        # as libpq reads it: a host, port or database may be a query option
        host, port, dbname = (fields.get(k) for k in ("host", "port", "dbname"))
        where = f"{host or 'localhost'}:{port or 5432}" + (f"/{dbname}" if dbname else "")
        if replica:  # so that its errors say which of the two failed
            where += " (the read replica)"
        return cls(
            conninfo,
            schema=options.get("schema", "rota"),
            where=where,
            pool_size=pool_size,
            replica=replica,
            create=create,
        )

    def now(self) -> float:
        with self._read() as tx:  # a read runs again through a lost connection
            return tx.now()

    def replication_lag(self) -> float | None:
        """How many seconds this store's server, a streaming replica, trails
        its primary (0: it has replayed all it received); None on a primary."""
        with self._read() as tx:
            row = tx.execute("replication_lag").fetchone()
        return None if row is None or row[0] is None else max(0.0, float(row[0]))

    def claim(
        self,
        worker_id: str,
        queues: Sequence[str],
        limit: int,
        host: HostScope = ANY_HOST,
    ) -> list[ClaimedJob]:
        self._wake_ups.mark()  # a wake-up from here on ends this thread's next wait
        return super().claim(worker_id, queues, limit, host)

    def wait(self, queues: Sequence[str], timeout: float) -> None:
        """Block until a wake-up (NOTIFY) reaches this thread's listener,
        until the next scheduled or parked job is due, or for ``timeout``
        seconds."""
        with self._read() as tx:
            now = tx.now()
            for query in ("next_due", "next_parked"):
                row = tx.execute(query).fetchone()
                if row and row[0] is not None:
                    timeout = min(timeout, max(0.0, row[0] - now))
        self._await_wake(timeout)

    def enqueue_in(self, connection: Any, jobs: Sequence[NewJob]) -> list[EnqueueResult]:
        """Store ``jobs`` in the caller's open psycopg transaction on
        ``connection``: they become visible to workers when it commits, and
        vanish if it rolls back. The connection must reach this store's
        database; its transaction is left open."""
        _checks.new_jobs(jobs)
        self._check_business_connection(connection)
        if not jobs:
            return []
        # The jobs' virtual times are taken in a transaction of the store's
        # own: the caller's holds no row other sends need (a queue's row, a
        # fair key's) while it is open. One it rolls back leaves a gap.
        vtimes = self._transact(lambda own: self._virtual_times(own, jobs))
        tx = PgTx(connection, self.channel)
        row_factory = connection.row_factory  # the caller's (dict_row, say), put back below:
        connection.row_factory = tuple_row  # the store's queries read tuples
        try:
            caller_path = tx.execute("search_path").fetchone()[0]
            tx.execute("set_local_search_path", (self.schema,))
            try:
                # in a savepoint: jobs the store refuses leave the caller's
                # transaction as it was, and usable
                with connection.transaction():
                    results = self._enqueue(tx, jobs, vtimes)  # its wake-up comes at commit
            finally:
                tx.execute("set_local_search_path", (caller_path,))
        except (pg_errors.UndefinedTable, pg_errors.InsufficientPrivilege) as exc:
            # (the savepoint is undone: the caller's transaction can still ask)
            raise self._caller_lacks_rights(tx, exc) or store_error(exc, self.where) from exc
        except psycopg.Error as exc:
            raise store_error(exc, self.where) from exc
        except Refused as refused:
            raise self._name_taken_id([job.id for job in jobs], refused) from None
        finally:
            connection.row_factory = row_factory
        return results

    def _caller_lacks_rights(self, tx: PgTx, exc: psycopg.Error) -> StoreError | None:
        """The rights to grant the caller's role when it may not use rota's
        schema or tables (without USAGE, the tables are not found); None if
        it may."""
        try:
            role, usage = tx.execute("caller_rights", (self.schema,)).fetchone()
        except psycopg.Error:  # the transaction cannot ask: say what PostgreSQL said
            return None
        if usage and not isinstance(exc, pg_errors.InsufficientPrivilege):
            return None
        return lacks_rights(self.where, role, self.schema, exc)

    def _check_business_connection(self, connection: Any) -> None:
        """Refuse, with the reason, a connection :meth:`enqueue_in` cannot use."""
        if isinstance(connection, psycopg.AsyncConnection):
            raise InvalidArgument(
                "connection is a psycopg AsyncConnection: sending in a transaction needs a "
                "psycopg.Connection (send from a thread, e.g. asyncio.to_thread, or without "
                "connection=)"
            )
        if not isinstance(connection, psycopg.Connection):
            raise InvalidArgument(
                f"connection must be a psycopg connection, not {_validate.type_name(connection)}"
            )
        if connection.closed:
            raise InvalidArgument(
                "connection is closed: send in an open transaction of an open connection"
            )
        info = connection.info
        if info.dbname != self.dbname:
            raise InvalidArgument(
                f"connection reaches database {info.dbname!r}, but this store's tables are in "
                f"{self.dbname!r}: connect to the store's database"
            )
        if info.pipeline_status != psycopg.pq.PipelineStatus.OFF:
            raise InvalidArgument(
                "connection is in pipeline mode: send outside `with conn.pipeline():`"
            )
        status = info.transaction_status
        if status == psycopg.pq.TransactionStatus.INERROR:
            raise InvalidArgument(
                "connection's transaction has failed (a statement in it raised an error): "
                "roll it back, then send in a new one"
            )
        if status == psycopg.pq.TransactionStatus.IDLE and connection.autocommit:
            raise InvalidArgument(
                "connection has no open transaction: it is in autocommit mode; enqueue inside "
                "`with conn.transaction():`"
            )
        # (idle and not in autocommit: the send's first statement begins the
        # transaction, as any statement would; a SQLAlchemy one begins so)


def split_url(url: str) -> tuple[str, dict[str, str]]:
    """A libpq URL without rota's own options, and those options."""
    parts = urlsplit(url)
    scheme = "postgresql" if parts.scheme in ("postgres", "postgresql") else parts.scheme
    query = parse_qsl(parts.query, keep_blank_values=True)
    own = {k: v for k, v in query if k in _OWN_OPTIONS}
    # %20 for a space: libpq reads a "+" in a URL as itself
    rest = urlencode([(k, v) for k, v in query if k not in _OWN_OPTIONS], quote_via=quote)
    # built by hand: urlunsplit drops the "//" of a URL without a host
    # (postgresql:///db, libpq's local socket), which libpq then refuses
    libpq = f"{scheme}://{parts.netloc}{parts.path}" + (f"?{rest}" if rest else "")
    return libpq + (f"#{parts.fragment}" if parts.fragment else ""), own
