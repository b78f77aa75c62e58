"""Wake-ups of a SQLite store's waiting workers, without polling.

Within a process, a commit that may give work wakes the waiting threads at
once. Across the processes of the machine, each process that waits on a
database listens on a Unix datagram socket of its own in the database's
wake-up directory (beside the file, or under the temporary directory when
that path would be too long for a socket), in one thread per process and
database; a commit that may give work sends one empty datagram to every
other socket there. A socket left behind by a process that died is removed
by the first sender it refuses.

Each wake-up adds one to the wake-up count (``rota.stores._wake_count``),
which a claim marks and a wait watches.

The listener also reads ``PRAGMA data_version`` once a second (every 50 ms
where there are no Unix sockets), so a commit whose sender could not reach
its socket (another user, without the right to write to the directory) is
seen within that time.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import logging
import os
import select
import socket
import sqlite3
import tempfile
import threading
from collections.abc import Callable

from rota.stores._wake_count import WakeCount

log = logging.getLogger("rota.store")
#: Seconds between two looks at ``data_version`` (the safety net).
_SAFETY = 1.0 if hasattr(socket, "AF_UNIX") else 0.05
#: Longest socket path every Unix takes (Linux allows 107 bytes, macOS 103).
_MAX_SOCKET_PATH = 100

_registry: dict[tuple[int, str], WakeUps] = {}
_guard = threading.Lock()
_sender: socket.socket | None = None

#: Opens a connection to the database, for the listener's own use.
Connect = Callable[[], sqlite3.Connection]


def open_wake_ups(path: str, connect: Connect | None, version_query: str) -> WakeUps:
    """The wake-ups of database ``path`` in this process, shared by its
    stores on that file (a forked child gets its own); each store that
    opens them calls :meth:`WakeUps.release` once when it closes. With no
    ``connect`` (a database in memory, which only this process sees) they
    stay within the process."""
    key = (os.getpid(), path)
    with _guard:
        found = _registry.get(key)
        if found is None:
            found = _registry[key] = WakeUps(path, connect, version_query)
        found.users += 1
        return found


def wake_directory(path: str) -> str:
    """Where the processes waiting on database ``path`` keep their sockets."""
    beside = f"{path}-wake"
    if len(beside) + 24 <= _MAX_SOCKET_PATH:
        return beside
    digest = hashlib.sha256(path.encode()).hexdigest()[:24]
    return os.path.join(tempfile.gettempdir(), f"rota-wake-{digest}")


class WakeUps(WakeCount):
    """The wake-ups of one database in one process (see the module docstring)."""

    def __init__(self, path: str, connect: Connect | None, version_query: str) -> None:
        super().__init__()
        self.users = 0
        self._key = (os.getpid(), path)
        self._connect = connect
        self._version_query = version_query
        unix = connect is not None and hasattr(socket, "AF_UNIX")
        self._directory = wake_directory(path) if unix else None
        self._name = f"{os.getpid()}-{id(self):x}.sock"

    def wake(self) -> None:
        """A commit may have given work: wake the waiters of this process
        and of every other process listening on the database."""
        self._bump()
        if self._directory is not None:
            _send_all(self._directory, self._name)

    def release(self) -> None:
        """One store of this process on the database closed: the last one
        stops the listener (which removes its socket)."""
        with _guard:
            self.users -= 1
            if self.users > 0:
                return
            if _registry.get(self._key) is self:
                del _registry[self._key]
        self._closed.set()
        if self._directory is not None:  # the listener is blocked on its socket
            _send_one(os.path.join(self._directory, self._name))

    def _listens(self) -> bool:
        # in memory, every writer is in this process
        return self._connect is not None and super()._listens()

    def _run(self) -> None:
        assert self._connect is not None
        listening = self._listen()
        try:
            with contextlib.closing(self._connect()) as conn:

                def version() -> int:
                    return int(conn.execute(self._version_query).fetchone()[0])

                seen = version()
                self._ready.set()
                while not self._closed.is_set():
                    if _received(listening, self._closed):
                        self._bump()
                        seen = version()
                    elif (now := version()) != seen:
                        seen = now
                        self._bump()
        except (sqlite3.Error, OSError) as exc:
            log.warning("the wake-up listener of a SQLite store stopped: %s", exc)
        finally:
            self._ready.set()
            if listening is not None:
                listening.close()
                _unlink(os.path.join(self._directory or "", self._name))

    def _listen(self) -> socket.socket | None:
        """This process's socket in the wake-up directory, or None when it
        cannot have one (then the listener only looks at ``data_version``)."""
        if self._directory is None:
            return None
        address = os.path.join(self._directory, self._name)
        listening = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        try:
            os.makedirs(self._directory, exist_ok=True)
            _unlink(address)
            listening.bind(address)
        except OSError as exc:
            listening.close()
            log.info("no wake-up socket at %s (%s): looking every %s s", address, exc, _SAFETY)
            return None
        atexit.register(_unlink, address)
        listening.setblocking(False)
        return listening


def _received(listening: socket.socket | None, closed: threading.Event) -> bool:
    """Whether a datagram came within ``_SAFETY`` seconds (all that came
    are read)."""
    if listening is None:
        closed.wait(_SAFETY)
        return False
    poller = select.poll()  # not select(): a process may hold more than 1,024 files
    poller.register(listening, select.POLLIN)
    if not poller.poll(_SAFETY * 1000):
        return False
    with contextlib.suppress(BlockingIOError):
        while True:
            listening.recv(1)
    return True


def _send_all(directory: str, own: str) -> None:
    """One empty datagram to every socket in ``directory`` but ``own``;
    a socket nobody listens on any more is removed."""
    try:
        names = os.listdir(directory)
    except OSError:
        return  # nobody waits yet
    sender = _sending_socket()
    for name in names:
        if name == own or not name.endswith(".sock"):
            continue
        address = os.path.join(directory, name)
        try:
            sender.sendto(b"", address)
        except (ConnectionRefusedError, FileNotFoundError):
            _unlink(address)  # its process is gone
        except OSError:
            pass  # full (a wake-up is pending there anyway) or not ours to write to


def _send_one(address: str) -> None:
    with contextlib.suppress(OSError):
        _sending_socket().sendto(b"", address)


def _sending_socket() -> socket.socket:
    global _sender
    with _guard:
        if _sender is None:
            _sender = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            _sender.setblocking(False)
        return _sender


def _unlink(address: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(address)
