"""Waiting for a store that cannot be reached when a worker or a scheduler
starts: on a machine's boot, or in a compose file, they may come up before
the database they use. They wait for it instead of exiting, trying again
with growing pauses and saying so; a stop signal ends the wait. An error
the store answers with (a refused login, a missing database) is not waited
for: it ends the start at once.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from rota.errors import StoreUnavailable

if TYPE_CHECKING:
    from rota._signals import StopSignals
    from rota.app import App

__all__ = ["LONGEST_PAUSE", "load_app_waiting", "wait_for_store"]

log = logging.getLogger("rota")

#: The pauses between tries double from one second up to this many.
LONGEST_PAUSE = 30.0


class _Tries:
    """The tries of one wait: pauses that double from one second up to
    :data:`LONGEST_PAUSE`, each failure logged with the store's words, and
    a line when the store answers after one."""

    def __init__(self) -> None:
        self.began = time.monotonic()
        self.pause = 1.0
        self.failures = 0

    def failed(self, error: BaseException) -> float:
        """Log ``error``; the pause before the next try."""
        pause, self.failures = self.pause, self.failures + 1
        log.warning(
            "%s; trying again in %g s (waited %.0f s; a stop signal ends the wait)",
            " ".join(str(error).split()).rstrip("."),  # (psycopg's hints take lines)
            pause,
            time.monotonic() - self.began,
        )
        self.pause = min(pause * 2, LONGEST_PAUSE)
        return pause

    def answered(self) -> None:
        if self.failures:
            log.warning("the store answers after %.0f s of waiting", time.monotonic() - self.began)


def wait_for_store(
    app: App, signals: StopSignals, stopping: Callable[[], bool] = lambda: False
) -> bool:
    """Open ``app``'s store and read its clock, again after each
    :class:`~rota.errors.StoreUnavailable` until it answers: True then,
    False once a stop signal came or ``stopping()`` turned true (checked
    whenever ``signals.wake()`` is called). Other errors are raised.

    Each try runs in a thread of its own, so that a signal ends the wait
    even while the store's own call is still retrying. A Redis store opened
    here does not wait ``retry_for`` for a server it has never reached, so
    the tries come at this wait's pauses, each logged; once it answered,
    the store rides out outages as always.
    """
    tries, waits = _Tries(), app.wait_for_store
    app.wait_for_store = False
    try:
        return _wait(app, signals, stopping, tries)
    finally:
        app.wait_for_store = waits


def _wait(app: App, signals: StopSignals, stopping: Callable[[], bool], tries: _Tries) -> bool:
    while True:
        outcome: list[BaseException | None] = []
        threading.Thread(
            target=_probe, args=(app, outcome, signals), name="rota-store-wait", daemon=True
        ).start()
        if _stopped(signals, stopping, done=outcome.__len__):  # (non-zero once answered)
            return False
        error = outcome[0]
        if error is None:
            tries.answered()
            return True
        if not isinstance(error, StoreUnavailable):
            raise error
        if _stopped(signals, stopping, deadline=time.monotonic() + tries.failed(error)):
            return False


def load_app_waiting(load: Callable[[], App]) -> App | None:
    """``load()``, again while the app's module fails to import because its
    store cannot be reached (a module that defines its schedules with
    ``app.schedule(...)`` writes them as it is imported), with the pauses
    of :func:`wait_for_store` (the module's app does not wait ``retry_for``
    for a Redis server it never reached, as :func:`wait_for_store`
    explains); None after Ctrl-C. A SIGTERM keeps its default action
    meanwhile: nothing runs yet."""
    from rota.app import App

    tries = _Tries()
    while True:
        App.wait_for_store = False
        try:
            app = load()
        except StoreUnavailable as error:
            pause = tries.failed(error)
        else:
            tries.answered()
            return app
        finally:
            App.wait_for_store = True
        try:
            time.sleep(pause)
        except KeyboardInterrupt:
            log.info("stopped before the store answered")
            return None


def _probe(app: App, outcome: list[BaseException | None], signals: StopSignals) -> None:
    """One try, in its own thread: None in ``outcome`` when the store
    answered, else the error it raised; then wake the waiting thread."""
    try:
        app.store.now()
        outcome.append(None)
    except BaseException as error:  # handed to the waiting thread
        outcome.append(error)
    signals.wake()


def _stopped(
    signals: StopSignals,
    stopping: Callable[[], bool],
    done: Callable[[], object] = lambda: False,
    deadline: float = math.inf,
) -> bool:
    """Wait until ``done()`` (checked at each wake) or the ``deadline``
    (monotonic), or a stop: whether it was a stop."""
    while not done():
        left = min(deadline - time.monotonic(), LONGEST_PAUSE)
        if left <= 0:
            return False
        if signals.wait(left) is not None or stopping():
            return True
    return False
