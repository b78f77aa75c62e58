"""The worker's side threads (acker, keeper, reaper, scheduler), each
restarted with backoff when its loop fails, until the worker is done."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from rota.errors import StoreUnavailable

log = logging.getLogger("rota.worker")

#: A side thread that ran this long before failing restarts after the first
#: backoff again (a new outage), not after the last one's.
QUIET_RUN = 60.0
#: The longest pause before a failed side thread's loop runs again (seconds).
MAX_BACKOFF = 30.0


def start_side(target: Callable[[], None], name: str, done: threading.Event) -> threading.Thread:
    """Run ``target`` in a daemon thread named ``name``: when it raises, the
    error is logged (the first of a series: in full, but a store outage in
    the store's own words, on one line) and it runs again after
    a pause that doubles with each failure in a row, until ``done`` is set;
    when it returns, the thread ends."""

    def run() -> None:
        failures = 0
        while not done.is_set():
            started = time.monotonic()
            try:
                target()
                return
            except Exception as exc:
                if time.monotonic() - started > QUIET_RUN:
                    failures = 0  # a new outage, not the last one going on
                failures += 1
                if failures == 1 and isinstance(exc, StoreUnavailable):  # its words say it all
                    log.warning("%s failed; restarting it with backoff: %s", name, exc)
                elif failures == 1:
                    log.exception("%s failed; restarting it with backoff", name)
                done.wait(min(MAX_BACKOFF, 0.5 * 2 ** min(failures, 6)))

    thread = threading.Thread(target=run, name=name, daemon=True)
    thread.start()
    return thread
