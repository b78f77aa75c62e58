"""A test app whose task records every execution in a log file."""

from __future__ import annotations

import os
import time

from rota import App, current_job

app = App(lease=float(os.environ.get("ROTA_TEST_LEASE", "30")))


@app.task()
def record(i: int, pause: float = 0.0) -> int:
    """Append "job_id attempt pid" to $ROTA_TEST_LOG, then return ``i``;
    with $ROTA_TEST_STARTS, append the job's id there as it starts."""
    starts = os.environ.get("ROTA_TEST_STARTS")
    if starts:
        with open(starts, "a") as started:
            started.write(f"{current_job().id}\n")
    if pause:
        time.sleep(pause)
    job = current_job()
    with open(os.environ["ROTA_TEST_LOG"], "a") as log:
        log.write(f"{job.id} {job.attempt} {os.getpid()}\n")
    return i
