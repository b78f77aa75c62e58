"""A count of wake-ups that threads wait on, bumped by a listener thread.

The stores whose idle workers are woken by their server or by their peers
(PostgreSQL's ``LISTEN``, SQLite's wake-up sockets) keep one such count per
process: a listener thread, started on first use, adds one for each wake-up.
A thread notes the count when it claims (:meth:`WakeCount.mark`) and a wait
returns as soon as the count moved since that thread last claimed or waited,
so work committed between a claim that found nothing and the wait that
follows it is not slept through.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod

#: The longest a claim waits for the listener to start listening.
START_BOUND = 1.0


class WakeCount(ABC):
    """The wake-up count of one store in one process; subclasses listen
    (:meth:`_run`, on a thread of its own, which sets ``_ready`` once it
    listens or gave up)."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._count = 0
        self._seen = threading.local()
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._closed = threading.Event()

    def mark(self) -> None:
        """Note, before this thread claims, the wake-ups so far (the listener
        starts first, so a commit after the claim ends its next wait)."""
        self._start(START_BOUND)
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

    def interrupt(self) -> None:
        """End the waits under way now, as a wake-up does."""
        self._bump()

    def _listens(self) -> bool:
        """Whether there is anything to listen to (else waits only see this
        process's own wake-ups)."""
        return not self._closed.is_set()

    def _start(self, bound: float) -> None:
        """Start the listener unless it runs, and give it up to ``bound``
        seconds to listen."""
        if not self._listens():
            return
        with self._changed:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="rota-wake", daemon=True)
                self._thread.start()
        self._ready.wait(max(0.0, bound))

    def _bump(self) -> None:
        with self._changed:
            self._count += 1
            self._changed.notify_all()

    @abstractmethod
    def _run(self) -> None:
        """Listen until ``_closed`` is set, calling :meth:`_bump` at each
        wake-up; set ``_ready`` once listening (or on giving up)."""
