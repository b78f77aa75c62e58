"""The PostgreSQL dialect of the SQL engine: pooled connections, transactions
that are run again after a deadlock or a dropped connection, migrations under
an advisory lock, and wake-ups by LISTEN/NOTIFY.

Calls ride out lost connections (a server restart, terminated backends) for
up to ``RETRY_FOR`` seconds, and a commit cut off by one is settled by asking
the server whether it happened (see ``_outages`` and
:meth:`PgConnections._transact`).

Every psycopg error that leaves this layer is a rota error
(:func:`rota.stores.postgres._tx.store_error`): :class:`StoreUnavailable`
when the server cannot be reached, or when it answered but trying again
later may succeed (a conflict, a lock not granted in time, a cancelled
statement, too few resources), saying which; else :class:`StoreError`
carrying PostgreSQL's message.
"""

from __future__ import annotations

import contextlib
import logging
import re
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any, NamedTuple, TypeVar, cast

import psycopg
import psycopg_pool
from psycopg import errors as pg_errors

from rota.errors import CommitInDoubt, InvalidArgument, StoreError
from rota.stores import MissingStore, OutdatedStore, server_protocol
from rota.stores.base import STORE_CREATORS
from rota.stores.postgres._outages import (
    IN_CALL,
    RETRY_FOR,
    Attempts,
    Outage,
    commit_survived,
    connection_lost,
    handle_library_logs,
)
from rota.stores.postgres._tx import PACKAGE, PgTx, Q, lacks_rights, store_error
from rota.stores.postgres._wakeups import WakeUps
from rota.stores.sql.queries import migrations, newest_migration
from rota.stores.sql.tx import Database, Relay, Tx, log_run_again

log = logging.getLogger("rota.store")
T = TypeVar("T")

#: A schema name rota accepts: a plain lower-case identifier, used unquoted.
SCHEMA_NAME = re.compile(r"[a-z_][a-z0-9_]{0,47}")
#: Errors after which a transaction is simply run again: PostgreSQL broke a
#: deadlock or a serialization conflict by aborting it, or a lock was not
#: granted within the session's lock_timeout (as the MySQL store runs a
#: transaction again after a lock wait timeout).
_RETRYABLE = (
    pg_errors.DeadlockDetected,
    pg_errors.SerializationFailure,
    pg_errors.LockNotAvailable,
)
_ATTEMPTS = 8
#: Who rota's connections say they are (pg_stat_activity.application_name),
#: unless the URL or PGAPPNAME names them.
_NAME = "rota"
#: What libpq says of a server that answered, but not as PostgreSQL does.
_NOT_POSTGRES = re.compile(
    r"invalid response to (SSL|GSSAPI) negotiation|expected authentication request from "
    r"server, but received"
)
#: The migrations that may take long on a big table, by version: what
#: ``rota migrate`` says before it runs them ({schema}: the store's schema).
SLOW_MIGRATIONS = {
    5: (
        "migration 5 builds index jobs_queue_seq on {schema}.jobs inside the migration's "
        "transaction, holding off writes to jobs meanwhile (about 0.5 s per 500,000 jobs); on "
        "a large table, build it beforehand without blocking (`rota migrate --check` says what "
        "a migration will do), and the migration finds it done: CREATE INDEX CONCURRENTLY "
        "jobs_queue_seq ON {schema}.jobs (queue, seq)"
    ),
}


class _Applied(NamedTuple):
    """What a schema holds of rota's, and who asked."""

    #: Whether the schema exists.
    schema_exists: bool
    #: The newest migration applied; None: the schema has no rota tables.
    version: int | None
    #: The role the store's connections act as.
    role: str

    @property
    def lacking(self) -> str:
        """How a schema without rota's tables lacks them, in words."""
        return "has no rota tables" if self.schema_exists else "does not exist"


@contextmanager
def _transaction(conn: psycopg.Connection[Any]) -> Iterator[None]:
    """A transaction on ``conn``, in pipeline mode: its BEGIN and COMMIT are
    queued with its statements, so neither costs a round trip of its own
    (psycopg's own transaction blocks wait for the BEGIN's reply). The
    enclosing pipeline's end sends them."""
    conn.execute(Q["begin"])
    try:
        yield
    except BaseException:
        with contextlib.suppress(psycopg.Error):  # a lost connection is dropped by the pool
            conn.execute(Q["rollback"])
        raise
    conn.execute(Q["commit"])


class _Session(Relay):
    """The connection of a :meth:`PgConnections._read` or ``_write`` block,
    taken from the pool at its first statement. A statement that meets a
    lost connection runs again on another one where nothing is lost by
    that: always in a read (each statement runs on its own, in autocommit),
    and in a write transaction while none of its statements has run yet
    (it then begins again)."""

    __slots__ = ("_began", "_conn", "_ran", "_store", "_tx", "_write")

    def __init__(self, store: PgConnections, write: bool) -> None:
        self._store = store
        self._write = write
        self._began: ExitStack | None = None
        self._conn: psycopg.Connection[Any] | None = None
        self._tx: PgTx | None = None
        self._ran = False

    def is_constraint_error(self, exc: BaseException) -> bool:
        return isinstance(exc, psycopg.IntegrityError)

    def wake(self) -> None:
        self._run(PgTx.wake)

    def end(self, exc: BaseException | None) -> None:
        """Commit the transaction (roll it back after ``exc``), or give the
        connection back to the pool, which drops a broken one."""
        began, conn, self._began, self._conn, self._tx = self._began, self._conn, None, None, None
        if began is not None:
            began.__exit__(None if exc is None else type(exc), exc, None)
        elif conn is not None:
            self._store._pool.putconn(conn)

    def _run(self, statement: Callable[[PgTx], T]) -> T:
        if self._ran:
            assert self._tx is not None
            return statement(self._tx)

        def attempt(attempts: Attempts) -> T:
            tx = self._tx or self._open(attempts.wait_limit())
            try:
                result = statement(tx)
            except psycopg.OperationalError as exc:
                with contextlib.suppress(psycopg.Error):
                    self.end(exc)
                raise
            self._ran = self._write
            return result

        return self._store._retrying(attempt)

    def _open(self, wait: float) -> PgTx:
        if self._write:
            self._began, self._conn, self._tx = self._store._begin(wait)
        else:
            self._conn = self._store._pool.getconn(wait)
            self._tx = PgTx(self._conn, self._store.channel)
        return self._tx


def _wrong_server(exc: psycopg.Error, params: dict[str, Any]) -> StoreError | None:
    """The error of a first connection that reached a server of another
    kind (a MySQL or Redis port), which trying again cannot change: told by
    what the server answered (libpq's words, :data:`_NOT_POSTGRES`), or,
    after a connection that timed out (a Redis server waits silently for a
    line), by one short exchange (:func:`server_protocol`). None when the
    server may be PostgreSQL: a timeout is then an outage, as before."""
    answered = _NOT_POSTGRES.search(str(exc)) is not None
    if not answered and not isinstance(exc, pg_errors.ConnectionTimeout):
        return None
    host, port = str(params.get("host") or params.get("hostaddr") or ""), params.get("port")
    port = port or "5432"
    kind = None
    if host and not host.startswith("/") and "," not in host and str(port).isdigit():
        kind = server_protocol(host, int(port))  # (not a Unix socket, nor a list of hosts)
    if kind == "PostgreSQL" or (kind is None and not answered):
        return None
    how = f"it answers as a {kind} server" if kind else "it answered as no PostgreSQL server does"
    return StoreError(
        f"the server at {host or 'localhost'}:{port} does not speak the PostgreSQL protocol "
        f"({how}): check the host and port of the store URL; PostgreSQL listens on 5432 "
        f"unless configured otherwise ({str(exc).strip()})"
    )


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
        create: bool = True,
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
        #: change is refused by the server (its transactions are read-only).
        self.replica = replica
        self._conninfo = conninfo
        #: The database the store's tables are in, as the server names it.
        self.dbname = ""
        self._wake_ups = WakeUps(self._listening_connection, self.where)
        self._pool = self._open_pool(conninfo, pool_size)
        self._outage = Outage(self.where, self._pool)
        handle_library_logs(self._pool.name, self._outage)
        try:
            if replica:
                self._check_replica()
            else:
                self._migrate(create)
        except BaseException:
            self.close()
            raise

    def _check_replica(self) -> None:
        """Refuse (:class:`StoreError`) a read URL whose schema holds no store,
        naming it: its reads would each fail on a missing table."""
        try:
            with self._pool.connection() as conn:
                applied = self._applied(conn)
        except (psycopg.Error, psycopg_pool.PoolTimeout) as exc:
            raise store_error(exc, self.where) from exc
        if applied.version is None:
            raise StoreError(
                f"the PostgreSQL server at {self.where} has no rota store in schema {self.schema} "
                f"(the schema {applied.lacking} there): the read URL must reach a replica of "
                "the store's own database (read_url=, ROTA_READ_URL, --read-url)"
            )

    def _open_pool(self, conninfo: str, size: int) -> psycopg_pool.ConnectionPool[Any]:
        """The pool, opened with one connection. Connections are not checked
        when they leave the pool (that would cost a round trip each time):
        a call that meets a lost connection renews the pool and runs again.

        One connection is made first, outside the pool: a server that cannot
        be reached, or refuses the database or the role, is reported at once
        with the server's own words, rather than after the pool's retries."""
        params = psycopg.conninfo.conninfo_to_dict(conninfo)
        given = params.get("options")
        # a replica's transactions are read-only whatever the server is: a
        # read URL that reaches a primary (a mistake, a pooler) changes nothing
        read_only = "-c default_transaction_read_only=on" if self.replica else ""
        options = " ".join(
            filter(None, [str(given or ""), f"-c search_path={self.schema}", read_only])
        )
        kwargs: dict[str, Any] = {
            "autocommit": True,
            "options": options,
            "fallback_application_name": _NAME,
        }
        try:
            timeout = params.get("connect_timeout") or 10
            with psycopg.connect(conninfo, connect_timeout=timeout, **kwargs) as first:
                self.dbname = first.info.dbname
        except psycopg.Error as exc:
            raise _wrong_server(exc, params) or store_error(exc, self.where) from None
        pool: psycopg_pool.ConnectionPool[Any] = psycopg_pool.ConnectionPool(
            conninfo,
            min_size=1,
            max_size=size,
            kwargs=kwargs,
            timeout=RETRY_FOR,
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
    def _write(self, sync: bool = True) -> Iterator[Tx]:  # (sync: see _transact)
        with self._session(write=True) as tx:
            yield tx

    @contextmanager
    def _read(self) -> Iterator[Tx]:
        with self._session(write=False) as tx:
            yield tx

    @contextmanager
    def _session(self, write: bool) -> Iterator[Tx]:
        session = _Session(self, write)
        started = time.monotonic()
        with IN_CALL:
            try:
                try:
                    yield session
                except BaseException as exc:
                    with contextlib.suppress(psycopg.Error, psycopg_pool.PoolTimeout):
                        session.end(exc)  # a rollback on a lost connection fails
                    raise
                session.end(None)
            except (psycopg.Error, psycopg_pool.PoolTimeout) as exc:
                # a lost connection not run again (a write's commit, or a later
                # statement of it) is an outage too; one already reported stays one
                if connection_lost(exc):
                    self._outage.lost(exc, started)
                raise store_error(exc, self.where) from exc

    def _transact(self, work: Callable[[Tx], T], *, sync: bool = True) -> T:
        """``work`` in one transaction, run again when PostgreSQL aborted it
        to break a deadlock, and through lost connections (a restart, a
        terminated backend) for up to ``RETRY_FOR`` seconds.

        A connection lost during the commit leaves open whether it happened.
        The transaction's id, asked for first and read with the work's first
        reply (no round trip of its own), is then looked up once the server
        answers: the work runs again only if the commit did not happen. Where
        that cannot be known (the work read no reply before committing, or a
        restarted server reports the id committed: see
        :func:`commit_survived`), the call raises :class:`CommitInDoubt`.

        Every commit waits for its WAL flush as the server is configured, a
        claim's too (``sync`` is not read): a server may crash while its
        workers live on, and a claim lost with it would hand a job that runs
        to another worker."""
        with IN_CALL:
            try:
                return self._retrying(lambda attempts: self._run(work, attempts))
            except (psycopg.Error, psycopg_pool.PoolTimeout) as exc:
                raise store_error(exc, self.where) from exc

    def _retrying(self, attempt: Callable[[Attempts], T]) -> T:
        """``attempt`` until it returns, again after each lost connection, for
        up to ``RETRY_FOR`` seconds from the first; then its error is raised.
        The outage is logged once, when it begins and when it ends."""
        attempts = Attempts()
        while True:
            try:
                result = attempt(attempts)
            except (psycopg.OperationalError, psycopg_pool.PoolTimeout) as exc:
                if not connection_lost(exc):
                    raise
                self._outage.lost(exc, attempts.started)
                if not attempts.pause():
                    raise
                continue
            self._outage.ended(attempts.started)
            return result

    def _run(self, work: Callable[[Tx], T], attempts: Attempts) -> T:
        """``work`` in a transaction, run again when PostgreSQL aborted it to
        break a deadlock or a serialization conflict."""
        for conflict in range(1, _ATTEMPTS + 1):
            try:
                return self._attempt(work, attempts)
            except _RETRYABLE as exc:
                if conflict == _ATTEMPTS:
                    raise
                log_run_again(log, self.where, exc, conflict)
                time.sleep(0.005 * conflict)
        raise AssertionError("unreachable")

    def _attempt(self, work: Callable[[Tx], T], attempts: Attempts) -> T:
        """``work`` in a transaction, once. A connection lost while committing
        is settled by :meth:`_committed`: its error is raised only when the
        commit did not happen."""
        began, _, tx = self._begin(attempts.wait_limit())
        committing, ident = False, None
        try:
            with began:
                result = work(tx)
                ident = tx.identity()
                committing = True
        except (psycopg.OperationalError, psycopg_pool.PoolTimeout) as exc:
            if not (committing and connection_lost(exc)):
                raise
            self._outage.lost(exc, attempts.started)
            if not self._committed(ident, exc):
                raise
        return result

    def _begin(self, wait: float) -> tuple[ExitStack, psycopg.Connection[Any], PgTx]:
        """A pooled connection in a pipelined transaction that has begun; the
        ``with`` block of the returned stack commits at its end (or rolls back)."""
        with ExitStack() as stack:
            conn = stack.enter_context(self._pool.connection(wait))
            pipeline = stack.enter_context(conn.pipeline())
            stack.enter_context(_transaction(conn))
            # a standby assigns no transaction ids (and commits nothing)
            opening = None if self.replica else conn.execute(Q["transaction_id"])
            return stack.pop_all(), conn, PgTx(conn, self.channel, pipeline, opening)

    def _committed(self, ident: tuple[Any, ...] | None, exc: BaseException) -> bool:
        """Whether the transaction ``ident`` (its id and its server's start
        time), whose commit a lost connection cut off, took effect: asked on
        another connection once the server answers, after waiting out a
        terminated backend that is still ending it (see
        :func:`commit_survived`). Raises :class:`CommitInDoubt` when that
        cannot be known."""
        unknown = CommitInDoubt(
            f"the connection to the PostgreSQL store at {self.where} was lost while committing, "
            f"and whether the commit happened is not known: {exc}"
        )
        if ident is None:
            raise unknown from exc
        xid, started = ident[:2]
        deadline = time.monotonic() + RETRY_FOR
        try:
            while True:
                state, now_started = self._retrying(lambda a: self._status(xid, a))
                restarted = now_started != started
                if state != "in progress" or restarted or time.monotonic() > deadline:
                    break
                time.sleep(0.01)
        except (psycopg.Error, psycopg_pool.PoolTimeout) as failed:
            raise unknown from failed
        survived = commit_survived(state, restarted)
        log.debug("a commit cut off by a lost connection: the server says %s", state)
        if survived is None:
            raise unknown from exc
        return survived

    def _status(self, xid: str, attempts: Attempts) -> tuple[str | None, Any]:
        """PostgreSQL's word on transaction ``xid`` (committed, aborted, in
        progress, future; None: too old to know) and when the server started."""
        with self._pool.connection(attempts.wait_limit()) as conn:
            try:
                row = conn.execute(Q["transaction_status"], (xid,)).fetchone()
            except pg_errors.InvalidParameterValue:  # an id it has not handed out (yet)
                row = ("future", conn.execute(Q["server_started"]).fetchone()[0])
        assert row is not None
        return cast(str | None, row[0]), row[1]

    # -- wake-ups --------------------------------------------------------------

    def _listening_connection(self) -> psycopg.Connection[Any]:
        """A new connection that listens on the store's channel."""
        conn = psycopg.connect(self._conninfo, autocommit=True, fallback_application_name=_NAME)
        try:
            conn.execute(Q["listen"].format(channel=self.channel))
        except BaseException:
            conn.close()
            raise
        return conn

    def _await_wake(self, timeout: float) -> None:
        """Return at the first wake-up since this thread last waited, or after
        ``timeout`` seconds (see :class:`WakeUps`)."""
        self._wake_ups.wait(timeout)

    def interrupt_waits(self) -> None:
        self._wake_ups.interrupt()

    # -- schema ------------------------------------------------------------------

    def _migrate(self, create: bool) -> None:
        """Bring the schema to the newest version. What it holds is read
        first, and nothing more is done when nothing is missing: a role that
        may only read and write rows (or a hot standby) uses a schema that an
        owner migrated. Otherwise the migrations run in one transaction under
        an advisory lock, so processes starting at once wait for the first
        one's. (Not pipelined: a migration script holds many statements.)

        ``create``: False changes nothing: a schema without rota's tables is
        refused with :class:`MissingStore`, older tables with
        :class:`OutdatedStore`."""
        newest = newest_migration(PACKAGE)
        try:
            with self._pool.connection() as conn:
                applied = self._applied(conn)
            if applied.version is None and not create:
                raise self._no_store(applied)
            if applied.version is not None and applied.version < newest and not create:
                raise OutdatedStore(
                    f"the tables of schema {self.schema} of the PostgreSQL store at {self.where}",
                    applied.version,
                    newest,
                    [
                        note.format(schema=self.schema)
                        for number, note in SLOW_MIGRATIONS.items()
                        if applied.version < number <= newest
                    ],
                )
            if applied.version is None or applied.version < newest:
                self._apply_migrations(applied)
        except (psycopg.Error, psycopg_pool.PoolTimeout) as exc:
            raise store_error(exc, self.where) from exc

    def _applied(self, conn: psycopg.Connection[Any]) -> _Applied:
        """What the schema holds of rota's, read without changing anything."""
        exists, has_versions, role = conn.execute(
            Q["schema_state"], {"schema": self.schema}
        ).fetchone()  # type: ignore[misc]
        if not has_versions:
            return _Applied(exists, None, role)
        try:
            row = conn.execute(Q["schema_version"].format(schema=self.schema)).fetchone()
        except pg_errors.InsufficientPrivilege as exc:
            raise lacks_rights(self.where, role, self.schema, exc) from None
        return _Applied(exists, int(row[0]) if row else 0, role)

    def _apply_migrations(self, found: _Applied) -> None:
        """Create what is missing of the schema (``found``, read before the
        lock: read again under it) and apply the newer migrations."""
        schema = {"schema": self.schema}
        applied = found
        try:
            with self._pool.connection() as conn, conn.transaction():
                conn.execute(Q["migration_lock"], (self.schema,))
                applied = self._applied(conn)
                if not applied.schema_exists:
                    conn.execute(Q["create_schema"].format(**schema))
                if applied.version is None:
                    conn.execute(Q["create_versions"].format(**schema))
                for number, script in migrations(PACKAGE):
                    if number > (applied.version or 0):
                        conn.execute(script)
                        conn.execute(Q["record_version"].format(**schema), (number,))
        except (pg_errors.InsufficientPrivilege, pg_errors.ReadOnlySqlTransaction) as exc:
            raise self._cannot_migrate(applied, exc) from None

    def _no_store(self, applied: _Applied) -> MissingStore:
        """The error of a schema that holds no store, for the commands that
        only read or steer what is there."""
        return MissingStore(
            f"no PostgreSQL store in schema {self.schema} at {self.where} (the schema "
            f"{applied.lacking}): check --url, ROTA_URL and the URL's schema= option; "
            f"{STORE_CREATORS}",
            newest_migration(PACKAGE),
        )

    def _cannot_migrate(self, applied: _Applied, exc: psycopg.Error) -> StoreError:
        """The error of a migration the server refused: what rota tried, the
        right that was missing, and how to get the schema migrated."""
        schema, role, database = self.schema, applied.role, self.dbname
        once = "`rota migrate`, a worker or `rota send` with its URL does"
        if not applied.schema_exists:
            tried = f"to create schema {schema} in database {database}"
            missing = f"role {role} lacks the CREATE right on database {database}"
            fix = (
                f"let an administrator create the schema for the role (CREATE SCHEMA {schema} "
                f"AUTHORIZATION {role}), or open the store once as a role that may create it "
                f"({once})"
            )
        elif applied.version is None:
            tried = f"to create the tables of schema {schema}"
            missing = f"role {role} lacks the CREATE right on schema {schema}"
            fix = (
                f"open the store once as the schema's owner ({once}), or GRANT CREATE ON "
                f"SCHEMA {schema} TO {role}"
            )
        else:
            tried = (
                f"to migrate the tables of schema {schema} from version {applied.version} to "
                f"{newest_migration(PACKAGE)}"
            )
            missing = f"role {role} may not alter them (only their owner may)"
            fix = f"open the store once as the owner of its tables ({once})"
        if isinstance(exc, pg_errors.ReadOnlySqlTransaction):
            missing = "the server is read-only (a hot standby, or default_transaction_read_only)"
            fix = f"open the store once on the primary ({once}); a standby serves it as a read URL"
        return StoreError(
            f"the PostgreSQL store at {self.where}: rota tried {tried}, and {missing}: {fix} "
            f"(PostgreSQL said: {str(exc).strip()})"
        )

    def close(self) -> None:
        """Close the pools and stop listening for wake-ups."""
        self._wake_ups.close()
        self._pool.close()
