"""A TCP proxy in front of a database server that cuts one connection exactly
at a commit, for the fault tests of the SQL stores.

Armed with ``"request"``, :class:`CommitCutter` closes the first connection
that sends a commit instead of passing it on (the commit never happens);
armed with ``"reply"``, the first one whose server reports a commit done,
instead of passing the report on (it happened, and the client cannot tell).
How a commit looks on the wire is the protocol's: :data:`POSTGRES` and
:data:`MYSQL` say.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Wire:
    """How a database protocol shows a commit."""

    #: Whether bytes a client sends hold a commit.
    commit: Callable[[bytes], bool]
    #: Whether the bytes a server sent since a commit reached it report the
    #: commit done (the end of its reply).
    committed: Callable[[bytes], bool]


#: PostgreSQL: a COMMIT among the client's messages, and the server's
#: CommandComplete tag for it.
POSTGRES = Wire(commit=lambda data: b"COMMIT" in data, committed=lambda data: b"COMMIT\0" in data)

_COM_QUERY = 0x03
_OK, _ERR = 0x00, 0xFF
_MORE_RESULTS = 0x0008  # SERVER_MORE_RESULTS_EXISTS: another statement's reply follows


def _mysql_commit(data: bytes) -> bool:
    """A query packet (``COM_QUERY``) whose last statement is COMMIT."""
    return (
        len(data) > 5
        and data[4] == _COM_QUERY
        and data[5:].rstrip(b" \t\r\n;").upper().endswith(b"COMMIT")
    )


def _length_encoded(data: bytes, at: int) -> int:
    """Where the length-encoded integer at ``at`` ends."""
    first = data[at]
    return at + {0xFC: 3, 0xFD: 4, 0xFE: 9}.get(first, 1)


def _mysql_reply_over(data: bytes) -> bool:
    """Whether ``data`` holds the last packet of a query's reply: an error,
    or an OK packet that announces no further result (the reply to the
    COMMIT that ends a query of several statements)."""
    at = 0
    while at + 4 <= len(data):
        size = int.from_bytes(data[at : at + 3], "little")
        packet = data[at + 4 : at + 4 + size]
        if len(packet) < size:
            return False  # the rest is still on its way
        if packet[:1] == bytes([_ERR]):
            return True
        if packet[:1] == bytes([_OK]):
            flags_at = _length_encoded(packet, _length_encoded(packet, 1))
            if not int.from_bytes(packet[flags_at : flags_at + 2], "little") & _MORE_RESULTS:
                return True
        at += 4 + size
    return False


#: MySQL / MariaDB: a query whose last statement is COMMIT (alone, or after
#: the statements sent with it in one round trip), and the end of the
#: server's reply to it.
MYSQL = Wire(commit=_mysql_commit, committed=_mysql_reply_over)


class _Link:
    """One proxied connection: both sockets, and the server's bytes held
    back since a commit went through while the proxy was armed with
    ``"reply"``."""

    def __init__(self, client: socket.socket, server: socket.socket) -> None:
        self.client = client
        self.server = server
        self.committing = False
        self.held = b""


class CommitCutter:
    """The proxy of the module docstring, listening on ``port`` of
    127.0.0.1 and passing connections on to ``target_port``, whose protocol
    ``wire`` describes. Set ``armed`` to ``"request"`` or ``"reply"``;
    ``cut`` is set once a connection was cut (only one ever is)."""

    def __init__(self, target_port: int, wire: Wire) -> None:
        self.target_port = target_port
        self.wire = wire
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.listener.getsockname()[1])
        self.armed: str | None = None
        self.cut = threading.Event()
        self._lock = threading.Lock()
        self._socks: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(("127.0.0.1", self.target_port))
            self._socks += [client, server]
            link = _Link(client, server)
            threading.Thread(target=self._requests, args=(link,), daemon=True).start()
            threading.Thread(target=self._replies, args=(link,), daemon=True).start()

    def _requests(self, link: _Link) -> None:
        with contextlib.suppress(OSError):
            while data := link.client.recv(65536):
                if self.armed is not None and self.wire.commit(data):
                    if self.armed == "request" and self._cut_now():
                        break  # dropped with the connection
                    link.committing = self.armed == "reply"  # before the server can answer
                link.server.sendall(data)
        self._close(link.client, link.server)

    def _replies(self, link: _Link) -> None:
        with contextlib.suppress(OSError):
            while data := link.server.recv(65536):
                if link.committing and not self.cut.is_set():
                    link.held += data
                    if not self.wire.committed(link.held):
                        continue  # held back until the report is complete
                    if self._cut_now():
                        break  # the report is dropped with the connection
                    data = b""  # another connection was cut: pass it on
                link.client.sendall(link.held + data)
                link.held = b""
        self._close(link.server, link.client)

    def _cut_now(self) -> bool:
        """Take the one cut; False when another connection took it."""
        with self._lock:
            if self.cut.is_set():
                return False
            self.cut.set()
            return True

    @staticmethod
    def _close(*socks: socket.socket) -> None:
        for sock in socks:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def close(self) -> None:
        """Stop listening and close every proxied connection."""
        self._close(self.listener, *self._socks)
