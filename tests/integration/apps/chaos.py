"""A test app for fault tests: a task that can be held at a gate and records its runs.

``$ROTA_TEST_LOG`` receives one line per finished execution::

    job_id attempt pid

A ``hold`` job waits (at most a minute) until the file ``$ROTA_TEST_GATE``
exists, so a test can keep jobs running on a worker while it cuts that
worker off, then let them finish into the cut.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from rota import App, current_job

app = App(lease=float(os.environ.get("ROTA_TEST_LEASE", "30")))

_HOLD_AT_MOST = 60.0


@app.task(name="step")
def step(i: int, hold: bool = False) -> dict[str, int]:
    """Wait at the gate if ``hold``, record the run, return who ran which attempt."""
    if hold:
        gate = Path(os.environ["ROTA_TEST_GATE"])
        deadline = time.monotonic() + _HOLD_AT_MOST
        while not gate.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
    job = current_job()
    with open(os.environ["ROTA_TEST_LOG"], "a") as log:
        log.write(f"{job.id} {job.attempt} {os.getpid()}\n")
    return {"i": i, "attempt": job.attempt, "pid": os.getpid()}
