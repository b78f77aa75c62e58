"""The MySQL / MariaDB dialect of the SQL engine: pooled connections,
transactions that are run again after a deadlock, a lock wait timeout or a
connection dropped before the commit, wake-ups of idle workers, and
migrations under a named lock. A transaction's statements are
:class:`rota.stores.mysql._tx.MySQLTx`'s.

Every driver error that leaves this layer is a rota error
(:func:`rota.stores.mysql._tx.store_error`): :class:`StoreUnavailable` when
the server cannot be reached, else :class:`StoreError` carrying the
server's message.
"""

from __future__ import annotations

import logging
import random
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import MySQLdb
from MySQLdb.constants import CLIENT
from MySQLdb.cursors import Cursor as TupleCursor

from rota.errors import CommitInDoubt, InvalidArgument, StoreError, StoreUnavailable
from rota.stores import MissingStore, OutdatedStore, server_protocol
from rota.stores.base import STORE_CREATORS
from rota.stores.mysql._pool import Pool, close_quietly
from rota.stores.mysql._tx import (
    PACKAGE,
    READ_ONLY,
    STATEMENT_END,
    MySQLTx,
    Q,
    connection_lost,
    ended_connection,
    error_code,
    store_error,
)
from rota.stores.sql.queries import migrations, newest_migration
from rota.stores.sql.tx import Database, Relay, Tx, log_run_again

log = logging.getLogger("rota.store")
T = TypeVar("T")

#: Server errors after which a transaction is simply run again: InnoDB broke a
#: deadlock (1213), or a lock was not granted in time (1205).
_CONFLICTS = frozenset({1213, 1205})
#: The database the URL names does not exist.
NO_DATABASE = 1049
#: The server refused the user the database (which may also not exist).
_NO_ACCESS = 1044
#: A table the statement names does not exist.
_NO_TABLE = 1146
#: The server refused a statement because it is read-only (READ_ONLY) or for
#: want of a right: on a database (1044), a table (1142) or a column (1143),
#: or a privilege such as SUPER (1227).
_DENIED = frozenset({1044, 1142, 1143, 1227}) | READ_ONLY
#: A database name rota accepts: letters, digits and underscores.
DATABASE_NAME = re.compile(r"[A-Za-z0-9_]{1,64}")
_ATTEMPTS = 10
#: Client errors of a connection to a server that may not speak MySQL: it
#: sent no greeting in time, or one of another protocol.
_SILENT, _NOT_MYSQL = frozenset({2013}), frozenset({2007, 2027})
#: The migrations that may take long on a big table, by version: what
#: ``rota migrate`` says before it runs them.
SLOW_MIGRATIONS = {
    6: (
        "migration 6 adds index jobs_queue_seq to table jobs in place (ALGORITHM=INPLACE, "
        "LOCK=NONE: sends, claims and finishes go on; about a second per 500,000 jobs); it "
        "first waits for transactions already open on jobs to end, and statements on jobs wait "
        "behind it meanwhile, so run it when no long transaction holds the table"
    ),
}
_FAST_POLL = 0.005  # seconds between looks at the wake-up count right after work


class _Reads(Relay):
    """The connection of one read (:meth:`MySQLConnections._read`), taken
    from the pool at its first statement. Reads run in autocommit, each
    statement on its own, so a statement that meets a lost connection (or
    cannot connect) runs again on a new one, up to ``attempts`` times, with
    the pauses and the outage report of a transaction (see
    :meth:`MySQLConnections._pause_before_retry`)."""

    __slots__ = ("_attempts", "_conn", "_store", "_tx")

    def __init__(self, store: MySQLConnections, attempts: int) -> None:
        self._store = store
        self._attempts = attempts
        self._conn: Any = None
        self._tx: MySQLTx | None = None

    def is_constraint_error(self, exc: BaseException) -> bool:
        return isinstance(exc, MySQLdb.IntegrityError)

    def wake(self) -> None:
        """Nothing: a read makes no work claimable."""

    def close(self) -> None:
        """Give the connection back to the pool."""
        conn, self._conn, self._tx = self._conn, None, None
        if conn is not None:
            self._store._pool.give(conn)

    def _run(self, statement: Callable[[MySQLTx], T]) -> T:
        for attempt in range(1, self._attempts + 1):
            try:
                if self._tx is None:
                    self._conn = self._store._pool.take()
                    self._tx = MySQLTx(self._conn)
                try:
                    result = statement(self._tx)
                except MySQLdb.Error as exc:
                    if connection_lost(exc) or _answers(self._conn):
                        raise
                    raise ended_connection(exc) from exc
            except BaseException as exc:
                if isinstance(exc, Exception) and not connection_lost(exc):
                    raise
                conn, self._conn, self._tx = self._conn, None, None
                if conn is not None:
                    self._store._pool.discard(conn, lost=connection_lost(exc))
                if attempt == self._attempts or not isinstance(exc, MySQLdb.Error):
                    raise
                pause = self._store._pause_before_retry(exc, attempt, committing=False)
                if pause is None:
                    raise
                time.sleep(pause)
                continue
            self._store._reachable()
            return result
        raise AssertionError("unreachable")


def _answers(conn: Any) -> bool:
    """Whether ``conn`` still reaches the server (one round trip)."""
    try:
        conn.ping()
    except MySQLdb.Error:
        return False
    return True


def _roll_back(conn: Any, exc: BaseException) -> None:
    """Roll back what ``conn`` has open after ``exc``; a broken connection
    has nothing to roll back (the server does it), and is dropped by the
    caller. Raises :func:`ended_connection` when ``exc`` was a server error
    and the rollback finds the connection gone."""
    if connection_lost(exc):
        return
    try:
        conn.rollback()
    except MySQLdb.Error as rollback_exc:
        log.debug("could not roll back: %s", rollback_exc)
        if isinstance(exc, MySQLdb.Error) and connection_lost(rollback_exc):
            raise ended_connection(exc) from exc


class MySQLConnections(Database):
    """A pool of connections to one MySQL or MariaDB database."""

    kind = "mysql"

    def __init__(
        self,
        connect: dict[str, Any],
        *,
        where: str,
        pool_size: int = 8,
        wake_poll: float = 0.1,
        create: bool = True,
        replica: bool = False,
    ) -> None:
        if not DATABASE_NAME.fullmatch(str(connect.get("database"))):
            raise InvalidArgument(
                f"MySQL database name {connect.get('database')!r} is not a plain name: use "
                "letters, digits and underscores (at most 64), as in mysql://user@host:3306/rota"
            )
        self.where = where
        #: Seconds between two looks of an idle worker at the wake-up count.
        self.wake_poll = wake_poll
        self._connect_args = connect
        self._outage = False
        self._seen = threading.local()  # the wake-up count each thread saw last
        self._active_at = 0.0  # when a wait of this store last saw the count move
        # interrupt_waits() calls so far (and commits that made work
        # claimable), under _interrupted
        self._interrupts = 0
        self._interrupted = threading.Condition()
        #: A read-only view on a replica of the store's server: no migrations,
        #: and every connection's transactions are read-only.
        self.replica = replica
        self._pool = Pool(self._open, pool_size, where, wait=30.0)
        try:
            if replica:
                self._check_replica()
            else:
                self._migrate(create)
        except BaseException:
            self.close()
            raise

    @property
    def wake_latency(self) -> float:
        """An idle worker sees new work at its next look: ``wake_poll`` (see
        ``Store.wake_latency``)."""
        return self.wake_poll

    def _open(self, with_database: bool = True) -> Any:
        """A new connection, set up for the store (autocommit: a transaction
        begins with an explicit statement)."""
        args = dict(self._connect_args)
        if not with_database:
            args.pop("database")
        conn = MySQLdb.connect(
            **args,
            charset="utf8mb4",
            binary_prefix=True,
            autocommit=True,
            client_flag=CLIENT.MULTI_STATEMENTS,
        )
        try:
            MySQLTx(conn).execute("session")
            MySQLTx(conn).execute("store_settings")
            if self.replica:  # root may write on a read-only server: no one does here
                MySQLTx(conn).execute("read_only_session")
        except BaseException:
            close_quietly(conn)
            raise
        return conn

    @contextmanager
    def _connection(self) -> Iterator[Any]:
        """A pooled connection, given back when the block ends; dropped when
        the block raised an error that may have broken it."""
        conn = self._pool.take()
        try:
            yield conn
        except BaseException as exc:
            if isinstance(exc, Exception) and not connection_lost(exc):
                self._pool.give(conn)
            else:
                self._pool.discard(conn, lost=connection_lost(exc))
            raise
        self._pool.give(conn)

    # -- transactions --------------------------------------------------------

    @contextmanager
    def _write(self, sync: bool = True) -> Iterator[Tx]:  # (sync: see _transact)
        try:
            with self._connection() as conn:
                tx = MySQLTx(conn)
                tx.execute("begin")
                try:
                    yield tx
                except BaseException as exc:
                    _roll_back(conn, exc)
                    raise
                tx.commit()
        except MySQLdb.Error as exc:
            raise store_error(exc, self.where) from exc
        if tx.woken:
            self._committed_work()

    @contextmanager
    def _read(self, attempts: int = _ATTEMPTS) -> Iterator[Tx]:
        """Reads, each statement run again through a lost connection up to
        ``attempts`` times."""
        reads = _Reads(self, attempts)
        try:
            yield reads
        except MySQLdb.Error as exc:
            raise store_error(exc, self.where) from exc
        finally:
            reads.close()

    def _transact(self, work: Callable[[Tx], T], *, sync: bool = True) -> T:
        """``work`` in one transaction. It runs again, after a short random
        pause, when InnoDB aborted it to break a deadlock or a lock was not
        granted in time, and when the connection dropped before the commit
        was sent (a server restart leaves the pool's connections broken); a
        connection lost during the commit is an outage, since the commit may
        or may not have happened. Every commit is flushed as the server's
        ``innodb_flush_log_at_trx_commit`` says (InnoDB has no setting per
        transaction), so ``sync`` is not read."""
        for attempt in range(1, _ATTEMPTS + 1):
            committing = False
            try:
                with self._connection() as conn:
                    tx = MySQLTx(conn)
                    tx.execute("begin")
                    try:
                        result = work(tx)
                        committing = True
                        tx.commit()
                    except BaseException as exc:
                        _roll_back(conn, exc)
                        raise
                self._reachable()
                if tx.woken:
                    self._committed_work()
                return result
            except MySQLdb.Error as exc:
                pause = self._pause_before_retry(exc, attempt, committing)
                if pause is None:
                    raise store_error(exc, self.where) from exc
                time.sleep(pause)
        raise AssertionError("unreachable")

    def _pause_before_retry(
        self, exc: MySQLdb.Error, attempt: int, committing: bool
    ) -> float | None:
        """How long to wait before running a failed transaction again; None
        when it must not run again (its error is then raised)."""
        if attempt == _ATTEMPTS:
            return None
        if error_code(exc) in _CONFLICTS:  # rolled back: nothing of it stays
            log_run_again(log, self.where, exc, attempt)
            return min(0.25, 0.005 * 2.0**attempt) * random.uniform(0.5, 1.5)
        if not connection_lost(exc):
            return None
        if committing:
            raise CommitInDoubt(
                f"the connection to the MySQL store at {self.where} was lost while committing, "
                f"and whether the commit happened is not known: {exc}"
            ) from exc
        if not self._outage and attempt > 1:  # the first loss may be one stale connection
            self._outage = True
            log.warning("lost the MySQL store at %s (%s); reconnecting", self.where, exc)
        return 0.0 if attempt == 1 else min(1.0, 0.05 * 2.0**attempt)

    def _reachable(self) -> None:
        if self._outage:
            self._outage = False
            log.warning("the MySQL store at %s is reachable again", self.where)

    # -- wake-ups --------------------------------------------------------------

    def _await_wake(self, timeout: float) -> None:
        """Return once the wake-up count moved, when the next delayed or
        parked job is due, or after ``timeout`` seconds, looking at the count
        every ``wake_poll`` seconds (more often right after work was seen:
        see :meth:`_poll`). A count that moved since this thread's last look
        returns at once: work committed between the caller's last claim and
        this wait is not slept through. A failure counts as a wake-up (after
        a short pause): what the caller does next reports it."""
        interrupts = self._interrupts
        try:
            with self._read(attempts=2) as tx:  # a wait does not ride out an outage
                now, due, parked, count = tx.execute("wait_state").fetchone()
                last, self._seen.count = getattr(self._seen, "count", count), count
                if count != last:
                    self._active_at = time.monotonic()
                    return
                for at in (due, parked):
                    if at is not None:
                        timeout = min(timeout, max(0.0, at - float(now)))
                self._poll(tx.execute("wakeups"), count, time.monotonic() + timeout, interrupts)
        except (StoreError, MySQLdb.Error) as exc:
            log.debug("waiting for work on the MySQL store at %s failed: %s", self.where, exc)
            time.sleep(min(timeout, 0.5))

    def _committed_work(self) -> None:
        """A transaction of this process made work claimable: its own waits
        for work return now rather than at their next look at the count (a
        worker whose finished jobs freed slots of a concurrency key claims
        again at once), and look often for a while, as after any work seen."""
        self._active_at = time.monotonic()
        self.interrupt_waits()

    def interrupt_waits(self) -> None:
        with self._interrupted:
            self._interrupts += 1
            self._interrupted.notify_all()

    def _poll(self, cursor: Any, count: int, deadline: float, interrupts: int) -> None:
        """Run the ``wakeups`` query of ``cursor`` again until the count is
        not ``count``, ``deadline`` passes, or :meth:`interrupt_waits` was
        called since it was ``interrupts``. The pause between two looks is
        a tenth of the time since this store last saw the count move, from
        10 ms up to ``wake_poll``: work often comes in bursts, and a worker
        idle for long polls at the slow pace only. (Straight on the driver's
        cursor: this loop is what an idle worker costs.)"""
        query = Q["wakeups"]
        while (left := deadline - time.monotonic()) > 0:
            idle = time.monotonic() - self._active_at
            pause = min(self.wake_poll, max(_FAST_POLL, idle / 10), left)
            with self._interrupted:
                if self._interrupted.wait_for(lambda: self._interrupts != interrupts, pause):
                    return
            cursor.execute(query)
            self._seen.count = cursor.fetchone()[0]
            if self._seen.count != count:
                self._active_at = time.monotonic()
                return

    # -- schema ------------------------------------------------------------------

    def _migrate(self, create: bool) -> None:
        """Bring the database to the newest schema. What it holds is read
        first, and nothing more is done when nothing is missing: a user that
        may only read and write rows uses a database its owner migrated.
        Otherwise the database is created if it does not exist, and the
        migrations run under a named lock of the server: processes starting
        at once wait for the first one's migration.

        ``create``: False changes nothing: a database that does not exist or
        has no rota tables is refused with :class:`MissingStore`, older tables
        with :class:`OutdatedStore`."""
        newest = newest_migration(PACKAGE)
        try:
            try:
                conn = self._pool.take()
            except MySQLdb.OperationalError as exc:
                wrong = self._wrong_server(exc)
                if wrong is not None:
                    raise wrong from None
                if error_code(exc) == _NO_ACCESS:
                    raise self._no_access(exc) from None
                if error_code(exc) != NO_DATABASE:
                    raise
                if not create:
                    raise self._no_store("does not exist") from None
                self._create_database()
                conn = self._pool.take()
            try:
                tx = MySQLTx(conn)
                version = self._applied(tx)
                if version is None and not create:
                    raise self._no_store("has no rota tables")
                if version is not None and version < newest and not create:
                    raise OutdatedStore(
                        f"the tables of the MySQL store at {self.where}",
                        version,
                        newest,
                        [n for v, n in SLOW_MIGRATIONS.items() if version < v <= newest],
                    )
                if version is None or version < newest:
                    self._migrate_on(tx)
            finally:
                self._pool.discard(conn)  # a fresh one is as cheap, and no lock stays
        except MySQLdb.Error as exc:
            raise store_error(exc, self.where) from exc

    def _wrong_server(self, exc: MySQLdb.OperationalError) -> StoreError | None:
        """The error of a first connection that reached a server of another
        kind (a PostgreSQL or Redis port), which trying again cannot change:
        told by a greeting of another protocol, or, when no greeting came
        in time (a PostgreSQL or Redis server waits for the client to speak
        first), by one short exchange (:func:`server_protocol`). None when
        the server may be MySQL: a silent one is then an outage, as before."""
        code = error_code(exc)
        host, port = self._connect_args["host"], self._connect_args["port"]
        if code not in _SILENT | _NOT_MYSQL or host == "localhost":  # (a Unix socket)
            return None
        kind = server_protocol(host, port)
        if kind == "MySQL" or (kind is None and code in _SILENT):
            return None
        how = f"it answers as a {kind} server" if kind else "its greeting is not MySQL's"
        return StoreError(
            f"the server at {host}:{port} does not speak the MySQL protocol ({how}): check "
            f"the host and port of the store URL; MySQL and MariaDB listen on 3306 unless "
            f"configured otherwise (the client said: {exc.args[-1] if exc.args else exc})"
        )

    def replication_lag(self) -> float | None:
        """How many seconds this store's server, a replica, trails its
        primary (0: caught up); None when it does not replicate, its
        replication is stopped, or the user may not ask."""
        try:
            with self._connection() as conn:
                cursor = conn.cursor(TupleCursor)
                cursor.execute(Q["replica_status"])
                row = cursor.fetchone()
                names = [column[0] for column in cursor.description or ()]
        except MySQLdb.Error:
            return None
        if row is None:
            return None
        status = dict(zip(names, row, strict=True))
        lag = status.get("Seconds_Behind_Master", status.get("Seconds_Behind_Source"))
        return None if lag is None else float(lag)

    def _check_replica(self) -> None:
        """Refuse (:class:`StoreError`) a read URL whose database holds no
        store, naming it: its reads would each fail on a missing table."""
        try:
            with self._connection() as conn:
                version = self._applied(MySQLTx(conn))
        except MySQLdb.Error as exc:
            if error_code(exc) in (NO_DATABASE, _NO_ACCESS):
                version = None
            else:
                raise store_error(exc, self.where) from exc
        if version is None:
            raise StoreError(
                f"the MySQL server at {self.where} has no rota store in database "
                f"{self._connect_args['database']}: the read URL must reach a replica of the "
                "store's own server (read_url=, ROTA_READ_URL, --read-url)"
            )

    def _applied(self, tx: MySQLTx) -> int | None:
        """The newest migration applied to the database; None when it has no
        rota tables. Read without changing anything."""
        try:
            return int(tx.execute("schema_version").fetchone()[0])
        except MySQLdb.Error as exc:
            if error_code(exc) == _NO_TABLE:
                return None
            if error_code(exc) in _DENIED:
                database, user = self._connect_args["database"], self._connect_args["user"]
                raise StoreError(
                    f"the MySQL store at {self.where}: user {user} may not use rota's tables "
                    f"in database {database}: GRANT SELECT, INSERT, UPDATE, DELETE ON "
                    f"{database}.* TO the user (the server said: {exc})"
                ) from None
            raise

    def _migrate_on(self, tx: MySQLTx) -> None:
        collation = _collation(tx.execute("server").fetchone()[0], self.where)
        if not tx.execute("migration_lock", (120,)).fetchone()[0]:
            raise StoreUnavailable(
                f"the MySQL store at {self.where}: another process held the migration lock "
                "for 120 s"
            )
        version = None
        try:
            version = self._applied(tx)  # again, under the lock
            if version is None:
                tx.execute("create_versions")
            for number, script in migrations(PACKAGE):
                if number > (version or 0):
                    for statement in STATEMENT_END.split(script.format(collation=collation)):
                        if statement.strip():
                            _apply(tx, statement)
                    tx.execute("record_version", (number,))
        except MySQLdb.Error as exc:
            if error_code(exc) not in _DENIED:
                raise
            tried = "to create its tables"
            if version is not None:
                newest = newest_migration(PACKAGE)
                tried = f"to migrate its tables from version {version} to {newest}"
            raise self._cannot_migrate(tried, "to create, alter and index tables", exc) from None
        finally:
            tx.execute("migration_unlock")

    def _create_database(self) -> None:
        conn = self._open(with_database=False)
        try:
            tx = MySQLTx(conn)
            collation = _collation(tx.execute("server").fetchone()[0], self.where)
            database = self._connect_args["database"]  # checked: letters, digits, _
            try:
                tx.run(Q["create_database"].format(database=database, collation=collation))
            except MySQLdb.Error as exc:
                if error_code(exc) not in _DENIED:
                    raise
                raise self._cannot_migrate("to create it", "to create databases", exc) from None
        finally:
            close_quietly(conn)

    def _no_store(self, found: str) -> MissingStore:
        """The error of a database that holds no store (it ``found``), for
        the commands that only read or steer what is there."""
        return MissingStore(
            f"no MySQL store at {self.where} (the database {found}): check --url and "
            f"ROTA_URL; {STORE_CREATORS}",
            newest_migration(PACKAGE),
        )

    def _no_access(self, exc: Exception) -> StoreError:
        """The error of a connection the server refused the database to (it
        says so too of a database that does not exist, to a user who may not
        create it)."""
        database, user = self._connect_args["database"], self._connect_args["user"]
        return StoreError(
            f"the MySQL store at {self.where}: user {user} may not use database {database}, "
            f"or it does not exist and the user may not create it: let an administrator "
            f"create it (CREATE DATABASE {database}) and GRANT ALL ON {database}.* TO the "
            f"user, or open the store once as a user that may (`rota migrate`, a worker or "
            f"`rota send` with its URL does) and GRANT SELECT, INSERT, UPDATE, DELETE ON "
            f"{database}.* TO the user (the server said: {exc})"
        )

    def _cannot_migrate(self, tried: str, right: str, exc: Exception) -> StoreError:
        """The error of a creation or migration the server refused: what rota
        tried, what was missing, and how to get the database migrated."""
        database, user = self._connect_args["database"], self._connect_args["user"]
        missing = f"user {user} lacks the right {right}"
        if error_code(exc) in READ_ONLY:
            missing = "the server is read-only"
        return StoreError(
            f"the MySQL store at {self.where}: rota tried {tried} (database {database}), "
            f"and {missing}: open the store once as a user that may (`rota migrate`, a worker "
            f"or `rota send` with its URL does), or let an administrator GRANT ALL ON "
            f"{database}.* TO the user (the server said: {exc})"
        )

    def close(self) -> None:
        """Close the pool's idle connections."""
        self._pool.close()


#: Server errors that say a migration's statement was applied before (by a
#: migration cut short after it): a duplicate column, a duplicate index.
_APPLIED_BEFORE = {1060, 1061}


def _apply(tx: MySQLTx, statement: str) -> None:
    """Run one statement of a migration. MySQL commits DDL statement by statement
    and has no ``ADD COLUMN IF NOT EXISTS``: a column or index a migration cut
    short already added is taken as done."""
    try:
        tx.run(statement)
    except MySQLdb.OperationalError as exc:
        if not (exc.args and exc.args[0] in _APPLIED_BEFORE):
            raise


def _collation(version: str, where: str) -> str:
    """The utf8mb4 collation that compares byte for byte without ignoring
    trailing spaces on the server of ``version``; refuses a server too old
    for rota (no SKIP LOCKED, or no such collation)."""
    numbers = tuple(int(part) for part in re.findall(r"\d+", version.split("-", 1)[0])[:3])
    if "mariadb" in version.lower():
        if numbers < (10, 6):
            raise StoreError(f"the MySQL store at {where} needs MariaDB 10.6 or newer: {version}")
        return "utf8mb4_nopad_bin"
    if numbers < (8, 0, 17):
        raise StoreError(f"the MySQL store at {where} needs MySQL 8.0.17 or newer: {version}")
    return "utf8mb4_0900_bin"
