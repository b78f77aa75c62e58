"""Connection handling shared by the parts of the SQLite store.

Every SQLite error that leaves this layer is a :class:`StoreError` carrying
SQLite's message (:class:`StoreUnavailable` when the file cannot be opened or
stays locked past the busy timeout); a write transaction that fails is rolled
back whole.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rota.errors import InvalidArgument, StoreError, StoreUnavailable
from rota.stores.sqlite._sql import migrations

#: SQLite result codes that mean the database cannot be reached (busy, locked, cannot open).
_UNAVAILABLE = frozenset({"SQLITE_BUSY", "SQLITE_LOCKED", "SQLITE_CANTOPEN"})

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


class Connections:
    """One connection per thread (and per process after a fork), opened lazily.

    ``:memory:`` is one in-memory database shared by every thread of the
    process that uses this store (not by other processes: a forked child
    sees none of it), kept alive until :meth:`close`. It has no WAL (SQLite
    keeps in-memory databases in memory-journal mode); writers take turns
    under the busy timeout as with a file.
    """

    path: str

    def __init__(self, path: str, *, synchronous: str = "FULL") -> None:
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
        if self._uri:
            self._keepalive = self._open()  # the database lives while one connection does
        self._migrate()

    def _conn(self) -> sqlite3.Connection:
        if self._pid != os.getpid():  # forked: the parent's connections are not ours
            self._pid = os.getpid()
            self._local = threading.local()
            self._all_conns = []
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._open()
            try:
                conn.execute("PRAGMA journal_mode = WAL")  # in memory: stays "memory"
            except StoreError as exc:
                conn.close()
                raise StoreUnavailable(f"cannot open SQLite database {self.path}: {exc}") from None
            conn.execute(f"PRAGMA synchronous = {self._synchronous}")
            conn.execute("PRAGMA busy_timeout = 60000")
            conn.execute("PRAGMA foreign_keys = OFF")
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
        except sqlite3.Error as exc:
            raise StoreUnavailable(f"cannot open SQLite database {self.path}: {exc}") from None
        conn.path = self.path
        return conn

    @contextmanager
    def _write(self, begin: str = "BEGIN IMMEDIATE") -> Iterator[sqlite3.Connection]:
        """A write transaction: committed when the block ends, rolled back whole
        when it raises; SQLite errors that escape it are raised as rota errors."""
        conn = self._conn()
        conn.execute(begin)
        try:
            try:
                yield conn
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:  # SQLite may have rolled back already (disk full)
                    conn.execute("ROLLBACK")
                raise
        except sqlite3.Error as exc:
            raise store_error(exc, self.path) from exc

    def _migrate(self) -> None:
        with self._write("BEGIN EXCLUSIVE") as conn:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            for number, script in migrations():
                if number > version:
                    for statement in script.split(";\n"):
                        if statement.strip():
                            conn.execute(statement)
                    conn.execute(f"PRAGMA user_version = {number}")

    def close(self) -> None:
        with self._conns_guard:
            for conn in self._all_conns:
                conn.close()
            self._all_conns.clear()
            if self._keepalive is not None:
                self._keepalive.close()  # an in-memory database is freed here
                self._keepalive = None
        self._local = threading.local()

    def _waiter_conn(self) -> sqlite3.Connection:
        # data_version ignores the connection's own commits, so waiting uses
        # a connection that never writes.
        conn: sqlite3.Connection | None = getattr(self._local, "waiter", None)
        if conn is None:
            conn = self._open()
            self._local.waiter = conn
            with self._conns_guard:
                self._all_conns.append(conn)
        return conn
