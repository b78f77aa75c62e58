"""Wake-ups of a PostgreSQL store: one LISTEN connection per store, in a
thread of its own, shared by every thread that waits.

Each NOTIFY (and each time the listener starts listening again after a lost
connection) adds one to a count. A thread notes the count when it claims
(:meth:`WakeUps.mark`), and a wait returns as soon as the count moved since
that thread last claimed or waited: a job sent between a claim that found
nothing and the wait that follows it is not missed.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

import psycopg

log = logging.getLogger("rota.store")
#: Seconds the listener waits for a notification before it looks whether
#: its store was closed; also the longest a claim waits for it to listen.
_TICK = 1.0


class WakeUps:
    """The wake-ups of one store (see the module docstring). ``listen``
    opens a connection that listens on the store's channel."""

    def __init__(self, listen: Callable[[], psycopg.Connection[Any]], where: str) -> None:
        self._listen = listen
        self._where = where
        self._changed = threading.Condition()
        self._count = 0
        self._seen = threading.local()
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()  # listening, or failed to: nobody waits for it
        self._closed = threading.Event()

    def mark(self) -> None:
        """Note, before this thread claims, the wake-ups so far."""
        self._start(_TICK)
        with self._changed:
            self._seen.count = self._count

    def wait(self, timeout: float) -> None:
        """Return once a wake-up came since this thread last claimed or
        waited (since now, if it never did), or after ``timeout`` seconds."""
        self._start(timeout)
        with self._changed:
            seen = getattr(self._seen, "count", self._count)
            if seen == self._count:
                self._changed.wait_for(lambda: self._count != seen, max(0.0, timeout))
            self._seen.count = self._count

    def close(self) -> None:
        """Stop listening (the listener closes its connection within a second)."""
        self._closed.set()

    def _start(self, bound: float) -> None:
        """Start the listener unless it runs, and give it up to ``bound``
        seconds to listen."""
        with self._changed:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="rota-listen", daemon=True)
                self._thread.start()
        self._ready.wait(max(0.0, bound))

    def _bump(self) -> None:
        with self._changed:
            self._count += 1
            self._changed.notify_all()

    def _run(self) -> None:
        failures = 0
        while not self._closed.is_set():
            try:
                with self._listen() as conn:
                    if self._ready.is_set():
                        self._bump()  # listening again: what came meanwhile is not missed
                    self._ready.set()
                    failures = 0
                    while not self._closed.is_set():
                        for _ in conn.notifies(timeout=_TICK):
                            self._bump()
            except psycopg.Error as exc:
                failures += 1
                log.debug("the wake-up listener of %s failed: %s", self._where, exc)
                self._bump()
                self._ready.set()
                self._closed.wait(min(5.0, 0.1 * 2**failures))
