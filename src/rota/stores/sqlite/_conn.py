"""Connection handling shared by the parts of the SQLite store."""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from rota.errors import InvalidArgument, StoreUnavailable
from rota.stores.sqlite._sql import migrations


class Connections:
    """One connection per thread (and per process after a fork), opened lazily."""

    path: str

    def __init__(self, path: str, *, synchronous: str = "NORMAL") -> None:
        if path != ":memory:":
            path = os.path.abspath(path)
        if synchronous.upper() not in {"OFF", "NORMAL", "FULL", "EXTRA"}:
            raise InvalidArgument(
                f"synchronous must be OFF, NORMAL, FULL or EXTRA, not {synchronous!r}"
            )
        self.path = path
        self._synchronous = synchronous.upper()
        self._local = threading.local()
        self._pid = os.getpid()
        self._all_conns: list[sqlite3.Connection] = []
        self._conns_guard = threading.Lock()
        self._migrate()

    def _conn(self) -> sqlite3.Connection:
        if self._pid != os.getpid():  # forked: the parent's connections are not ours
            self._pid = os.getpid()
            self._local = threading.local()
            self._all_conns = []
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            try:
                conn = sqlite3.connect(
                    self.path, isolation_level=None, check_same_thread=False, timeout=60
                )
                conn.execute("PRAGMA journal_mode = WAL")
            except sqlite3.OperationalError as exc:
                raise StoreUnavailable(f"cannot open SQLite database {self.path}: {exc}") from None
            conn.execute(f"PRAGMA synchronous = {self._synchronous}")
            conn.execute("PRAGMA busy_timeout = 60000")
            conn.execute("PRAGMA foreign_keys = OFF")
            self._local.conn = conn
            with self._conns_guard:
                self._all_conns.append(conn)
        return conn

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        conn = self._conn()
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def _migrate(self) -> None:
        conn = self._conn()
        conn.execute("BEGIN EXCLUSIVE")
        try:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            for number, script in migrations():
                if number > version:
                    for statement in script.split(";\n"):
                        if statement.strip():
                            conn.execute(statement)
                    conn.execute(f"PRAGMA user_version = {number}")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def close(self) -> None:
        with self._conns_guard:
            for conn in self._all_conns:
                conn.close()
            self._all_conns.clear()
        self._local = threading.local()

    def _waiter_conn(self) -> sqlite3.Connection:
        # data_version ignores the connection's own commits, so waiting uses
        # a connection that never writes.
        conn: sqlite3.Connection | None = getattr(self._local, "waiter", None)
        if conn is None:
            conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            self._local.waiter = conn
            with self._conns_guard:
                self._all_conns.append(conn)
        return conn
