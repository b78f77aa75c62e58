"""The SQLite dialect of the SQL engine: connections, transactions, migrations.

Every SQLite error that leaves this layer is a :class:`StoreError` carrying
SQLite's message (:class:`StoreUnavailable` when the file cannot be opened or
stays locked past the busy timeout); a write transaction that fails is rolled
back whole.
"""

from __future__ import annotations

import math
import os
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from rota.errors import InvalidArgument, StoreError, StoreUnavailable
from rota.stores import MissingStore, OutdatedStore
from rota.stores.base import STORE_CREATORS
from rota.stores.sql.queries import ENGINE_FILES, load, migrations, newest_migration
from rota.stores.sql.tx import Changed, Cursor, Database, Params, Tx
from rota.stores.sqlite._wakeups import WakeUps, open_wake_ups
from rota.stores.sqlite._writers import WriterLine

PACKAGE = "rota.stores.sqlite"
#: Every statement of the SQLite store, by name.
Q = load(PACKAGE, "connection.sql", *ENGINE_FILES)
#: The migrations that may take long on a big table, by version: what
#: ``rota migrate`` says before it runs them.
SLOW_MIGRATIONS = {
    2: (
        "migration 2 builds two indexes of parked jobs on table jobs in an exclusive "
        "transaction: every other writer waits until it ends"
    ),
    13: (
        "migration 13 builds index jobs_queue_seq on table jobs in an exclusive "
        "transaction: every other writer waits until it ends (about 1.2 s per 500,000 jobs)"
    ),
}
_CHUNK = 500  # values per IN (...) list, under SQLite's variable limit
#: The levels of ``PRAGMA synchronous`` that sync every commit in WAL mode.
_SYNCED = frozenset({"FULL", "EXTRA"})

#: Bytes of write-ahead log kept once it starts over after a checkpoint: a
#: burst (a large send, a purge) grows the log, and without a bound it would
#: keep that size for as long as the database is open.
WAL_SIZE_LIMIT = 16 * 2**20
#: ``PRAGMA auto_vacuum`` of a database that gives free pages back on request.
_INCREMENTAL = 2
#: Free pages a database keeps for the rows to come (4 MiB at SQLite's
#: default page size) rather than give back to the file system.
KEEP_FREE_PAGES = 1024
#: Pages given back per write turn: a few milliseconds of the write lock.
FREE_PAGES_STEP = 1024
#: The most pages one call gives back (64 MiB at the default page size):
#: more than a retention pass purges, so the file keeps up with the purges.
FREE_PAGES_MOST = 16 * FREE_PAGES_STEP

#: SQLite result codes that mean the database cannot be reached (busy, locked, cannot open).
_UNAVAILABLE = frozenset({"SQLITE_BUSY", "SQLITE_LOCKED", "SQLITE_CANTOPEN"})
_BUSY = ("SQLITE_BUSY", "SQLITE_LOCKED")

#: The path that names a private in-memory database.
MEMORY = ":memory:"


def _memory_uri() -> str:
    """A fresh name for an in-memory database that every connection of this
    process can open (SQLite's ``memdb`` VFS shares a database whose name
    starts with ``/``; unlike a shared-cache database it honours the busy
    timeout, so threads wait for each other's writes instead of failing)."""
    if sqlite3.sqlite_version_info < (3, 36, 0):
        raise InvalidArgument(
            f"sqlite:///:memory: needs SQLite 3.36 or newer to share the database between "
            f"threads (this Python has {sqlite3.sqlite_version}); use a file: sqlite:///path"
        )
    return f"file:/rota-{os.getpid()}-{uuid.uuid4().hex}?vfs=memdb"


def store_error(exc: sqlite3.Error, path: str) -> StoreError:
    """The rota error for an SQLite error on the database at ``path``."""
    name = getattr(exc, "sqlite_errorname", None) or ""
    primary = "_".join(name.split("_")[:2])  # SQLITE_BUSY_SNAPSHOT -> SQLITE_BUSY
    kind = StoreUnavailable if primary in _UNAVAILABLE else StoreError
    return kind(f"the SQLite database {path} failed: {exc}")


class _Connection(sqlite3.Connection):
    """A connection whose statements outside a transaction (reads) raise rota
    errors; inside one, :meth:`Connections._write` translates what escapes, so
    the code in the transaction may still catch SQLite's own errors."""

    path = ""

    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
        if self.in_transaction:
            return super().execute(sql, parameters)
        try:
            return super().execute(sql, parameters)
        except sqlite3.Error as exc:
            raise store_error(exc, self.path) from exc


class SQLiteTx(Tx):
    """A connection of the SQLite store, running its named queries."""

    __slots__ = ("_conn", "_lists", "woken")

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self._lists: dict[tuple[str, int], str] = {}
        #: Whether waiters are to be woken once the transaction commits.
        self.woken = False

    def execute(self, name: str, params: Params = (), where: Sequence[str] = ()) -> Cursor:
        sql = Q[name]
        if where:
            sql = sql.format(where=" AND ".join(Q[fragment] for fragment in where))
        elif "{where}" in sql:
            sql = sql.format(where=Q["no_filter"])
        return self._conn.execute(sql, params)

    def executemany(self, name: str, rows: Iterable[Params]) -> Changed:
        return self._conn.executemany(Q[name], rows)

    def rows_in(self, name: str, values: Sequence[Any], params: Sequence[Any] = ()) -> list[Any]:
        rows: list[Any] = []
        for start in range(0, len(values), _CHUNK):
            chunk = values[start : start + _CHUNK]
            sql = self._lists.get((name, len(chunk)))
            if sql is None:
                sql = Q[name].format(values=",".join("?" * len(chunk)))
                self._lists[(name, len(chunk))] = sql
            rows += self._conn.execute(sql, (*params, *chunk)).fetchall()
        return rows

    def now(self) -> float:
        return time.time()

    def now_after_locks(self) -> float:
        return time.time()  # (one writer at a time: every read is after the locks)

    def is_constraint_error(self, exc: BaseException) -> bool:
        return isinstance(exc, sqlite3.IntegrityError)

    def wake(self) -> None:
        self.woken = True


class Connections(Database):
    """One connection per thread (and per process after a fork), opened lazily.

    ``:memory:`` is one in-memory database shared by every thread of the
    process that uses this store (not by other processes: a forked child
    sees none of it), kept alive until :meth:`close`. It has no WAL (SQLite
    keeps in-memory databases in memory-journal mode); writers take turns
    under the busy timeout as with a file.
    """

    path: str

    def __init__(self, path: str, *, synchronous: str = "FULL", create: bool = True) -> None:
        self._uri = False
        self._keepalive: sqlite3.Connection | None = None
        if path == MEMORY:
            path, self._uri = _memory_uri(), True
        else:
            path = os.path.abspath(path)
        if synchronous.upper() not in {"OFF", "NORMAL", "FULL", "EXTRA"}:
            raise InvalidArgument(
                f"SQLite option synchronous must be full (the default), extra, normal or off, "
                f"not {synchronous!r}"
            )
        self.path = path
        self._synchronous = synchronous.upper()
        self._local = threading.local()
        self._pid = os.getpid()
        self._all_conns: list[sqlite3.Connection] = []
        self._conns_guard = threading.Lock()
        self._wakes: WakeUps | None = None
        self._wakes_pid = 0
        #: Write transactions take turns here rather than in SQLite's busy handler.
        self._writers = WriterLine(None if self._uri else path)
        if self._uri:
            self._keepalive = self._open()  # the database lives while one connection does
        try:
            self._migrate(create)
        except BaseException:
            self.close()
            raise

    def _conn(self) -> sqlite3.Connection:
        if self._pid != os.getpid():  # forked: the parent's connections are not ours
            self._pid = os.getpid()
            self._local = threading.local()
            self._all_conns = []
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._open()
            try:
                if conn.execute(Q["page_count"]).fetchone()[0] == 0:
                    # a database this makes can give its free pages back (see
                    # give_back_free_pages; setting it needs a right to write)
                    conn.execute(Q["incremental_auto_vacuum"])
                conn.execute(Q["use_wal"])  # in memory: stays "memory"
                conn.execute(Q["limit_wal_size"].format(size=WAL_SIZE_LIMIT))
            except StoreError as exc:
                conn.close()
                # busy or locked by another process: for now; else (cannot open its
                # files: no right to the directory) trying again won't do
                cause = getattr(exc.__cause__, "sqlite_errorname", "") or ""
                kind = StoreUnavailable if cause.startswith(_BUSY) else StoreError
                raise kind(f"cannot open SQLite database {self.path}: {exc}") from None
            conn.execute(Q["set_synchronous"].format(level=self._synchronous))
            conn.execute(Q["set_busy_timeout"])
            conn.execute(Q["no_foreign_keys"])
            self._local.conn = conn
            with self._conns_guard:
                self._all_conns.append(conn)
        return conn

    def _open(self) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(
                self.path,
                uri=self._uri,
                isolation_level=None,
                check_same_thread=False,
                timeout=60,
                factory=_Connection,
            )
        except sqlite3.Error as exc:  # no such directory, no right to it: trying again won't do
            raise StoreError(f"cannot open SQLite database {self.path}: {exc}") from None
        conn.path = self.path
        # the store clock, for the queries that read it themselves
        conn.create_function("rota_now", 0, time.time)
        return conn

    @contextmanager
    def _write(self, sync: bool = True) -> Iterator[Tx]:
        with self._writers.turn(), self._transaction("begin_write", sync) as conn:
            tx = SQLiteTx(conn)
            yield tx
        if tx.woken:
            self._wake_ups().wake()

    @contextmanager
    def _read(self) -> Iterator[Tx]:
        yield SQLiteTx(self._conn())

    @contextmanager
    def _transaction(self, begin: str, sync: bool = True) -> Iterator[sqlite3.Connection]:
        """A transaction opened with statement ``begin``: committed when the
        block ends, rolled back whole when it raises; SQLite errors that
        escape it are raised as rota errors. Without ``sync`` its commit is
        not synced to disk at the ``full`` and ``extra`` levels (SQLite
        allows the level to change only between transactions); the next
        synced commit of any connection syncs it with its own, the log
        being one file."""
        conn = self._conn()
        relaxed = not sync and not self._uri and self._synchronous in _SYNCED
        try:
            if relaxed:
                conn.execute(Q["set_synchronous"].format(level="NORMAL"))
            conn.execute(Q[begin])
            try:
                yield conn
                conn.execute(Q["commit"])
            except BaseException:
                if conn.in_transaction:  # SQLite may have rolled back already (disk full)
                    conn.execute(Q["rollback"])
                raise
            finally:
                if relaxed and not conn.in_transaction:
                    conn.execute(Q["set_synchronous"].format(level=self._synchronous))
        except sqlite3.Error as exc:
            raise store_error(exc, self.path) from exc

    def give_back_free_pages(
        self,
        keep: int = KEEP_FREE_PAGES,
        step: int = FREE_PAGES_STEP,
        most: int | None = FREE_PAGES_MOST,
    ) -> int:
        """Give the file's free pages (left by deleted rows) beyond ``keep``
        back to the file system, ``step`` pages per turn to write (other
        writers go between turns), ``most`` pages at most (None: all);
        returns how many it gave back. The file shrinks at the next checkpoint of the
        write-ahead log. A database made before rota turned on incremental
        auto-vacuum keeps its free pages for reuse and gives none back
        (docs/sqlite.md, "Disk space", says how to convert one)."""
        conn = self._conn()
        if conn.execute(Q["auto_vacuum"]).fetchone()[0] != _INCREMENTAL:
            return 0
        given, cap = 0, math.inf if most is None else most
        while given < cap:
            free: int = conn.execute(Q["free_pages"]).fetchone()[0]
            pages = int(min(step, free - keep, cap - given))
            if pages <= 0:
                break
            with self._writers.turn():
                try:
                    # (a script: the pragma frees a page per step, and only a
                    # script steps it to the end)
                    conn.executescript(Q["give_back_pages"].format(pages=pages))
                except sqlite3.Error as exc:
                    if conn.in_transaction:
                        conn.execute(Q["rollback"])
                    raise store_error(exc, self.path) from exc
            given += pages
        return given

    def _migrate(self, create: bool) -> None:
        """Bring the database to the newest schema. Its version is read
        first, and nothing is written when it is the newest; otherwise the
        migrations run in one exclusive transaction, which reads the version
        again (another process may have migrated meanwhile).

        ``create``: False changes nothing: a database without rota's tables
        is refused with :class:`MissingStore`, an older one with
        :class:`OutdatedStore`."""
        newest = newest_migration(PACKAGE)
        version = int(self._conn().execute(Q["schema_version"]).fetchone()[0])
        if version >= newest:
            return
        if not create:
            if version == 0:
                raise MissingStore(
                    f"no SQLite store in {self.path} (the file has no rota tables): check "
                    f"--url, ROTA_URL or the current directory; {STORE_CREATORS}",
                    newest,
                )
            raise OutdatedStore(
                f"the tables of the SQLite store {self.path}",
                version,
                newest,
                [note for number, note in SLOW_MIGRATIONS.items() if version < number <= newest],
            )
        with self._transaction("begin_exclusive") as conn:
            version = conn.execute(Q["schema_version"]).fetchone()[0]
            for number, script in migrations(PACKAGE):
                if number > version:
                    for statement in script.split(";\n"):
                        if statement.strip():
                            conn.execute(statement)
                    conn.execute(Q["set_schema_version"].format(version=int(number)))

    def _wake_ups(self) -> WakeUps:
        """This process's wake-ups of the database (see ``_wakeups``)."""
        with self._conns_guard:
            if self._wakes is None or self._wakes_pid != os.getpid():  # first use, or forked
                connect = None if self._uri else self._open
                self._wakes = open_wake_ups(self.path, connect, Q["data_version"])
                self._wakes_pid = os.getpid()
            return self._wakes

    def close(self) -> None:
        with self._conns_guard:
            if self._wakes is not None and self._wakes_pid == os.getpid():
                self._wakes.release()
            self._wakes = None
            self._writers.close()
            for conn in self._all_conns:
                conn.close()
            self._all_conns.clear()
            if self._keepalive is not None:
                self._keepalive.close()  # an in-memory database is freed here
                self._keepalive = None
        self._local = threading.local()
