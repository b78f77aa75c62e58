"""A small pool of MySQL connections: at most ``size`` at once, opened when
first needed, the most recently used handed out first."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from typing import Any

from rota.errors import StoreUnavailable

#: A connection idle longer than this is pinged before it is handed out (the
#: server may have closed it: ``wait_timeout``, a restart).
_STALE_AFTER = 60.0

#: Connections a forked child inherited: never used, and never closed (closing
#: one would end the parent's session on the socket both share), so they are
#: kept referenced for the life of the child.
_inherited: list[Any] = []


class Pool:
    """Connections made by ``connect``, shared by the threads of one process.
    A connection is used by one thread at a time, between :meth:`take` and
    :meth:`give` (or :meth:`discard`, for one that may be broken)."""

    def __init__(self, connect: Callable[[], Any], size: int, where: str, wait: float) -> None:
        self._connect = connect
        self._size = size
        self._where = where
        self._wait = wait
        self._guard = threading.Lock()
        self._idle: list[tuple[Any, float]] = []
        self._slots = threading.BoundedSemaphore(size)
        self._pid = os.getpid()

    def take(self) -> Any:
        """A connection for this thread alone; raises the driver's error when
        a new one cannot be opened, :class:`StoreUnavailable` when all are in
        use for longer than the pool's wait."""
        self._after_fork()
        if not self._slots.acquire(timeout=self._wait):
            raise StoreUnavailable(
                f"all {self._size} connections to the MySQL store at {self._where} stayed "
                f"in use for {self._wait:.0f} s (raise pool_size in the URL)"
            )
        try:
            return self._idle_connection() or self._connect()
        except BaseException:
            self._slots.release()
            raise

    def give(self, conn: Any) -> None:
        """Hand back a connection that is fine to use again."""
        if self._pid == os.getpid():
            with self._guard:
                self._idle.append((conn, time.monotonic()))
            self._slots.release()

    def discard(self, conn: Any, lost: bool = False) -> None:
        """Close a connection that may be broken, in place of :meth:`give`.
        ``lost``: it lost the server, which then most likely dropped the idle
        connections too (a restart): they are closed as well."""
        if self._pid != os.getpid():
            return
        close_quietly(conn)
        self._slots.release()
        if lost:
            self.close()

    def close(self) -> None:
        """Close the idle connections (those in use close when discarded)."""
        with self._guard:
            idle, self._idle = self._idle, []
        if self._pid == os.getpid():
            for conn, _ in idle:
                close_quietly(conn)

    def _idle_connection(self) -> Any:
        """The most recently used idle connection that still answers, or None."""
        while True:
            with self._guard:
                if not self._idle:
                    return None
                conn, since = self._idle.pop()
            if time.monotonic() - since < _STALE_AFTER:
                return conn
            try:
                conn.ping()
            except Exception:
                close_quietly(conn)
                continue
            return conn

    def _after_fork(self) -> None:
        if self._pid == os.getpid():
            return
        with self._guard:
            _inherited.extend(conn for conn, _ in self._idle)
            self._idle = []
            self._slots = threading.BoundedSemaphore(self._size)
            self._pid = os.getpid()


def close_quietly(conn: Any) -> None:
    """Close ``conn``, which may be broken already."""
    try:
        conn.close()
    except Exception:  # already broken: nothing to release
        return
