"""A test app for fault tests: a task that can be held at a gate and records its runs.

``$ROTA_TEST_LOG`` receives one line per finished execution::

    job_id attempt pid

A ``hold`` job waits (at most a minute) until the file ``$ROTA_TEST_GATE``
exists, so a test can keep jobs running on a worker while it cuts that
worker off, then let them finish into the cut.

Pauses wait on an event rather than ``time.sleep``: under libfaketime with
``FAKETIME_DONT_FAKE_MONOTONIC=1`` (the clock-skew test), ``time.sleep``
fails with EINVAL, because libfaketime shifts the absolute monotonic deadline
Python hands to ``clock_nanosleep``.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from rota import App, current_job

app = App(lease=float(os.environ.get("ROTA_TEST_LEASE", "30")))

_HOLD_AT_MOST = 60.0


def _pause(seconds: float) -> None:
    threading.Event().wait(seconds)


@app.task(name="step")
def step(i: int, hold: bool = False, pause: float = 0.0) -> dict[str, int]:
    """Wait at the gate if ``hold``, then ``pause`` seconds; record the run and
    return who ran which attempt."""
    if hold:
        gate = Path(os.environ["ROTA_TEST_GATE"])
        deadline = time.monotonic() + _HOLD_AT_MOST
        while not gate.exists() and time.monotonic() < deadline:
            _pause(0.01)
    _pause(pause)
    job = current_job()
    with open(os.environ["ROTA_TEST_LOG"], "a") as log:
        log.write(f"{job.id} {job.attempt} {os.getpid()}\n")
    return {"i": i, "attempt": job.attempt, "pid": os.getpid()}
