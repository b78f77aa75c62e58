"""A worker that cannot report an attempt's outcome yet (the store refuses
its finishes for a while) keeps renewing that job's lease until the report
goes through: the job is not recovered and run again meanwhile."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

from helpers import wait_for
from rota import App
from rota.errors import StoreUnavailable
from rota.models import JobState, Outcome
from rota.worker import Worker

LEASE = 1.0


def test_a_job_whose_report_is_late_keeps_its_lease(tmp_path: Path) -> None:
    app = App(f"sqlite:///{tmp_path / 'reports.db'}", lease=LEASE)
    runs: list[int] = []

    @app.task()
    def once() -> None:
        runs.append(1)

    store = app.store
    finish = store.finish
    refusing = threading.Event()
    refusing.set()

    def refused_for_now(outcomes: Sequence[Outcome]) -> list[bool]:
        if refusing.is_set():
            raise StoreUnavailable("finishes are refused for now (this test)")
        return finish(outcomes)

    store.finish = refused_for_now  # type: ignore[method-assign]
    worker = Worker(app, queues=["default"], concurrency=1, heartbeat=0.5)
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    try:
        job_id = once.send().id
        wait_for(lambda: runs, timeout=10, what="the job to run")
        ran_at = store.now()
        # three leases long, the outcome cannot be reported; the worker's own
        # reaper looks for expired leases four times a lease meanwhile
        wait_for(lambda: store.now() > ran_at + 3 * LEASE, timeout=10, what="three leases")
        job = store.get_job(job_id)
        assert job is not None and job.state is JobState.RUNNING, job
        refusing.clear()
        wait_for(
            lambda: store.get_job(job_id).state is JobState.SUCCEEDED,  # type: ignore[union-attr]
            timeout=60,
            what="the late report",
        )
    finally:
        worker.stop()
        thread.join(30)
    job = store.get_job(job_id)
    assert job is not None
    assert runs == [1]
    assert (job.attempt, job.lost) == (1, 0)
    assert [entry["event"] for entry in job.history] == ["succeeded"]
    app.close()
