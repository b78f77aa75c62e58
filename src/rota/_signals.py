"""Stop signals (SIGTERM, SIGINT, SIGHUP) as requests the main thread waits for.

Python runs a signal handler in the main thread between two bytecodes,
wherever that thread is: also inside the locked section of the
``threading`` primitive it is waiting on. A handler that sets a
:class:`threading.Event` or takes a lock there waits for the very thread it
interrupted, and a process asked to stop hangs instead (the :mod:`signal`
module's documentation warns of it). :class:`StopSignals` only counts a
signal and puts it in a :class:`queue.SimpleQueue`, whose ``put`` may
interrupt the same thread's ``get`` safely; the main thread acts on it
outside the handler.
"""

from __future__ import annotations

import queue
import signal
import time
from collections.abc import Callable
from types import FrameType

__all__ = ["REPEAT_WINDOW", "StopSignals"]

#: A signal the same as the first, within this many seconds of it, is the
#: same request: GNU ``timeout`` signals its command, then its own process
#: group, which the command is in.
REPEAT_WINDOW = 0.25


class StopSignals:
    """The stop signals a process received, and a wait for the next one.

    A signal the same as the first that comes within :data:`REPEAT_WINDOW`
    of it is not counted. ``on_repeat(count)`` runs in the handler itself
    from the second signal on, for what cannot wait for the main thread (an
    exit at once); like the handler, it must not take a lock the main thread
    may hold (the :mod:`logging` module's locks are reentrant, and may be
    taken).
    """

    def __init__(self, on_repeat: Callable[[int], None] | None = None) -> None:
        #: How many stop signals were received.
        self.received = 0
        self._on_repeat = on_repeat
        self._first: tuple[int, float] | None = None  # the first signal, and when
        self._inbox: queue.SimpleQueue[int | None] = queue.SimpleQueue()

    def install(self) -> None:
        """Take SIGTERM and SIGINT from now on (from the main thread only), and
        SIGHUP (the terminal or SSH session closed), unless it is ignored, as
        ``nohup`` has it."""
        signal.signal(signal.SIGTERM, self._handle)
        signal.signal(signal.SIGINT, self._handle)
        if signal.getsignal(signal.SIGHUP) is not signal.SIG_IGN:
            signal.signal(signal.SIGHUP, self._handle)

    def is_set(self) -> bool:
        """Whether a stop signal was received."""
        return self.received > 0

    def wait(self, timeout: float) -> int | None:
        """Wait up to ``timeout`` seconds for a signal not waited for yet, or
        for :meth:`wake`: the signal's number, or None."""
        try:
            return self._inbox.get(timeout=timeout)
        except queue.Empty:
            return None

    def wake(self) -> None:
        """End the wait under way, or the next one, at once (from any thread)."""
        self._inbox.put(None)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        now = time.monotonic()
        if self._first is None:
            self._first = (signum, now)
        elif self._first[0] == signum and now - self._first[1] < REPEAT_WINDOW:
            # not counted, but a wake all the same: on CPython 3.11 a handler
            # that puts nothing can leave the interrupted SimpleQueue.get
            # waiting past its timeout, for good (seen under a storm of signals)
            self._inbox.put(None)
            return
        self.received += 1
        self._inbox.put(signum)
        if self.received > 1 and self._on_repeat is not None:
            self._on_repeat(self.received)
