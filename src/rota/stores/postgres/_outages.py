"""Lost connections of the PostgreSQL store: which errors mean one, how long
a call keeps trying, and how an outage is reported (once each way, by rota
rather than by psycopg once per connection and reconnection attempt).
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import psycopg
import psycopg_pool

log = logging.getLogger("rota.store")

#: How long a call keeps trying, from its first lost connection, before it
#: raises :class:`~rota.errors.StoreUnavailable`.
RETRY_FOR = 30.0
#: Pauses between the attempts of a call that keep failing: the first retry
#: starts at once, the next after the shortest pause, doubling to the longest.
_SHORTEST_PAUSE = 0.05
_LONGEST_PAUSE = 1.0


def connection_lost(exc: BaseException) -> bool:
    """Whether ``exc`` says the connection or the server went away, so the
    same statements may succeed on another connection: an error of the
    connection itself (no SQLSTATE, or class 08), an operator's intervention
    (57P: shutdown, a terminated backend, a server starting up), or no
    connection from the pool in time."""
    if isinstance(exc, psycopg_pool.PoolTimeout):
        return True
    if not isinstance(exc, psycopg.OperationalError):
        return False
    state = exc.sqlstate
    return state is None or state.startswith(("08", "57P"))


def commit_survived(state: str | None, restarted: bool) -> bool | None:
    """Whether a transaction whose commit a lost connection cut off took
    effect, from PostgreSQL's word on its id afterwards (``pg_xact_status``:
    committed, aborted, in progress; ``"future"`` for an id the server has
    not handed out; None when it no longer knows) and whether the server
    restarted since the transaction began. None: that cannot be known.

    On the same server the word is exact. After a restart it may be about
    another transaction: ids that no durable record mentions are handed out
    again. A commit that survived the restart is durable and keeps its id,
    so aborted, in progress (then someone else's) and future all mean it
    was lost with the crash, and committed is in doubt.
    """
    if state == "committed":
        return None if restarted else True
    if state in ("aborted", "future"):
        return False
    if state == "in progress" and restarted:
        return False
    return None  # still in progress, or too old to know


class Attempts:
    """The attempts of one store call through lost connections, and when it
    gives up (``RETRY_FOR`` seconds after its first lost connection)."""

    __slots__ = ("_deadline", "_pause", "started")

    def __init__(self) -> None:
        #: When the current attempt started (monotonic).
        self.started = time.monotonic()
        self._deadline: float | None = None
        self._pause = 0.0

    def wait_limit(self) -> float:
        """How long this attempt may wait for a connection from the pool."""
        if self._deadline is None:
            return RETRY_FOR
        return max(0.001, self._deadline - time.monotonic())

    def pause(self) -> bool:
        """Wait before the next attempt; False, at once, when the call has
        been failing for too long to try again."""
        now = time.monotonic()
        if self._deadline is None:  # counted from the call's start (it may have waited)
            self._deadline = self.started + RETRY_FOR
        if now >= self._deadline:
            return False
        time.sleep(min(self._pause, self._deadline - now))
        self._pause = min(_LONGEST_PAUSE, max(_SHORTEST_PAUSE, 2 * self._pause))
        self.started = time.monotonic()
        return True


class Outage:
    """Lost connections to one server, reported once per outage: a warning
    at the first loss, and one when an attempt begun after it succeeds.

    The first loss also renews the pool (idle connections are closed, those
    in use are closed when they come back): after a restart, or after the
    server ended this process's connections, every pooled connection is
    broken, and no call should have to find that out one connection at a
    time. A loss met by an attempt begun before that renewal belongs to the
    outage already reported.
    """

    def __init__(self, where: str, pool: psycopg_pool.ConnectionPool[Any]) -> None:
        self.where = where
        self._pool = pool
        self._lock = threading.Lock()
        self._since: float | None = None
        self._renewed = float("-inf")

    @property
    def active(self) -> bool:
        """Whether an outage was reported and has not ended."""
        return self._since is not None

    def lost(self, exc: BaseException, started: float) -> None:
        """Note a lost connection met by an attempt begun at ``started``."""
        with self._lock:
            if self._since is not None or started < self._renewed:
                return
            self._since = self._renewed = time.monotonic()
        self._pool.drain()
        text = str(exc).strip()
        reason = text.splitlines()[0] if text else type(exc).__name__
        log.warning(
            "lost the connection to the PostgreSQL store at %s (%s); reconnecting",
            self.where,
            reason,
        )

    def ended(self, started: float) -> None:
        """Note a call's success with an attempt begun at ``started``."""
        since = self._since
        if since is None or started < since:
            return  # no outage, or an attempt older than it
        with self._lock:
            if self._since is None:
                return
            self._since = None
        log.warning(
            "reconnected to the PostgreSQL store at %s after %.1f s",
            self.where,
            time.monotonic() - since,
        )


#: The pools rota opened, by name, with their outages: a pool's failed
#: reconnections during an outage are rota's to report.
_POOLS: dict[str, Outage] = {}
#: Messages psycopg logs while it unwinds a call whose connection was lost
#: (each pipeline level and the transaction fail to end on it, the pool
#: throws it away): rota reports the outage itself.
_HANDLED = frozenset(
    {
        "error ignored terminating %r: %s",
        "error ignored exiting %r: %s",
        "error ignored in rollback on %s: %s",
        "error ignored in rollback of %s: %s",
        "closing returned connection: %s",
        "discarding closed connection: %s",
        "discarding broken connection: %s",
    }
)
_inside = threading.local()
_install_lock = threading.Lock()
_installed = False


class _Handled(logging.Filter):
    """Drops psycopg's warnings about connections that rota handles: one per
    pipeline level and connection lost in a rota call, one per failed
    reconnection attempt of a rota pool during an outage rota reported.
    (Outside an outage, as when a store opens, they say why it cannot.)"""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.msg == "error connecting in %r: %s" and isinstance(record.args, tuple):
            outage = _POOLS.get(str(record.args[0]))
            return outage is None or not outage.active
        return not (record.msg in _HANDLED and getattr(_inside, "depth", 0) > 0)


def handle_library_logs(pool_name: str, outage: Outage) -> None:
    """Let rota report the lost connections of pool ``pool_name``, whose
    outages ``outage`` reports (and of the calls that ``IN_CALL`` marks),
    instead of psycopg."""
    global _installed
    with _install_lock:
        _POOLS[pool_name] = outage
        if not _installed:
            for name in ("psycopg", "psycopg.pool"):
                logging.getLogger(name).addFilter(_Handled())
            _installed = True


class _InCall:
    """Marks this thread as inside a rota call for the length of a ``with``
    block: psycopg's warnings about connections it loses meanwhile are
    dropped (rota reports the outage)."""

    __slots__ = ()

    def __enter__(self) -> None:
        _inside.depth = getattr(_inside, "depth", 0) + 1

    def __exit__(self, *exc: object) -> None:
        _inside.depth -= 1


#: ``with IN_CALL:`` around the psycopg calls of a rota call.
IN_CALL = _InCall()
