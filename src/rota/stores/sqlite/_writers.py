"""The line of a SQLite database's writers on this machine.

SQLite admits one write transaction at a time. A connection that finds the
write lock taken sleeps in SQLite's busy handler (1, 2, 5, 10 ms and more
between looks), and the lock may sit free while it sleeps: under load the
writers of one worker (its claims and its reports) and of several worker
processes spend more time asleep than writing. So rota's writers wait
their turn in a line instead: the threads of a process on a lock, the
processes of the machine on an advisory ``flock`` of a file in the
database's wake-up directory, which the kernel hands on the moment it is
let go. Writers outside rota (the ``sqlite3`` shell, another program) are
not in the line; SQLite's own lock still orders them and rota's, through
the busy timeout. A process that cannot open the file (no ``flock`` on the
platform, no right to create it) lines up its own threads only.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import weakref
from collections.abc import Iterator

from rota.errors import StoreUnavailable
from rota.stores.sqlite._wakeups import wake_directory

try:
    import fcntl
except ImportError:  # pragma: no cover - not on Windows
    fcntl = None  # type: ignore[assignment]

log = logging.getLogger("rota.store")

#: Seconds a thread waits for its process's turn before the store reports
#: itself unavailable, as SQLite's busy timeout does.
TURN_TIMEOUT = 60.0

#: Every open line of this process, to be reset in a forked child.
_open_lines: weakref.WeakSet[WriterLine] = weakref.WeakSet()


class WriterLine:
    """The turn to write to the database at ``path`` (None: a database in
    memory, which only this process sees), for this process's threads and,
    through the lock file, the machine's processes."""

    def __init__(self, path: str | None) -> None:
        self._path = path
        self._threads = threading.Lock()
        self._fd: int | None = None
        self._opened = False  # the lock file is opened at the first turn
        _open_lines.add(self)

    @contextlib.contextmanager
    def turn(self) -> Iterator[None]:
        """Hold the turn to write for the block."""
        if not self._threads.acquire(timeout=TURN_TIMEOUT):
            raise StoreUnavailable(
                f"the SQLite database {self._path}: no turn to write within "
                f"{TURN_TIMEOUT:g} s (this process's writer before it has not finished: "
                "it writes, or waits for another process on this machine, or for a "
                "program outside rota such as the sqlite3 shell, that holds the database)"
            )
        try:
            fd = self._lock_file()
            if fd is None:
                yield
                return
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            self._threads.release()

    def close(self) -> None:
        """Let go of the lock file (the store closed)."""
        with self._threads:
            self._drop_file()

    def _lock_file(self) -> int | None:
        if not self._opened:
            self._opened = True
            if self._path is not None and fcntl is not None:
                self._fd = _open_lock_file(self._path)
        return self._fd

    def _drop_file(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
        self._fd, self._opened = None, False

    def _after_fork(self) -> None:
        # A child shares the parent's open file, and with it the parent's
        # hold of the lock: it opens a file of its own at its first turn,
        # and keeps no copy that would hold the lock past the parent's death.
        self._threads = threading.Lock()
        self._drop_file()


def _open_lock_file(path: str) -> int | None:
    """The lock file of the database at ``path``, opened; None when it
    cannot be (then SQLite's busy handler orders the processes)."""
    directory = wake_directory(path)
    name = os.path.join(directory, "writers.lock")
    try:
        os.makedirs(directory, exist_ok=True)
        # read-only is enough for flock, and for a file another user made
        return os.open(name, os.O_RDONLY | os.O_CREAT, 0o644)
    except OSError as exc:
        log.info("no writers' lock file at %s (%s): SQLite's busy handler orders them", name, exc)
        return None


def _reset_in_child() -> None:
    for line in list(_open_lines):
        line._after_fork()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_in_child)
