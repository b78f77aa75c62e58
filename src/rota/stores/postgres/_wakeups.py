"""Wake-ups of a PostgreSQL store: one LISTEN connection per store, in a
thread of its own, shared by every thread that waits.

Each NOTIFY (and each time the listener starts listening again after a lost
connection) adds one to the store's wake-up count (``rota.stores._wake_count``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import psycopg

from rota.stores._wake_count import WakeCount

log = logging.getLogger("rota.store")
#: Seconds the listener waits for a notification before it looks whether
#: its store was closed.
_TICK = 1.0


class WakeUps(WakeCount):
    """The wake-ups of one store (see the module docstring). ``listen``
    opens a connection that listens on the store's channel."""

    def __init__(self, listen: Callable[[], psycopg.Connection[Any]], where: str) -> None:
        super().__init__()
        self._listen = listen
        self._where = where

    def close(self) -> None:
        """Stop listening (the listener closes its connection within a second)."""
        self._closed.set()

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
