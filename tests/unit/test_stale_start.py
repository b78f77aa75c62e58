"""A job whose lease ran out before a slot took it up is not started: after a
stall longer than the lease (a suspended process), the store has handed the job
out again, and running it here too would run it twice. Nor is one cancelled
while it waited: it is reported cancelled."""

from __future__ import annotations

import time
from pathlib import Path

from rota import App
from rota.models import JobState, LeaseRef
from rota.worker.worker import Worker


def test_a_job_whose_lease_ran_out_while_waiting_is_dropped_unrun(tmp_path: Path) -> None:
    app = App(f"sqlite:///{tmp_path / 'rota.db'}", lease=5.0)

    @app.task(name="echo")
    def echo(value: int) -> int:
        return value

    echo.send(1)
    echo.send(2)
    worker = Worker(app)
    fresh, stale = worker._claim(2)
    worker._flights.inflight[stale.id, stale.token].renewed = time.monotonic() - stale.lease - 0.1

    assert worker._may_start(fresh)
    assert not worker._may_start(stale)
    # no longer renewed or reported:
    assert set(worker._flights.inflight) == {(fresh.id, fresh.token)}
    app.close()


def test_a_renewed_lease_keeps_a_waiting_job_startable(tmp_path: Path) -> None:
    app = App(f"sqlite:///{tmp_path / 'rota.db'}", lease=5.0)
    app.task(name="echo")(lambda value: value)
    app.tasks["echo"].send(1)
    worker = Worker(app)
    (job,) = worker._claim(1)
    worker._flights.inflight[job.id, job.token].renewed = time.monotonic() - job.lease - 0.1

    worker._leases.renew()

    assert worker._may_start(job)
    app.close()


def test_a_waiting_job_whose_renewal_finds_its_lease_lost_is_dropped_unrun(
    tmp_path: Path,
) -> None:
    app = App(f"sqlite:///{tmp_path / 'rota.db'}", lease=30.0)
    app.task(name="echo")(lambda value: value)
    app.tasks["echo"].send(1)
    app.tasks["echo"].send(2)
    worker = Worker(app)
    kept, taken_back = worker._claim(2)
    app.store.release([LeaseRef(taken_back.id, taken_back.token)])  # as a recovery would
    for job in (kept, taken_back):  # a third of the lease passed: both are renewed
        worker._flights.inflight[job.id, job.token].renewed = time.monotonic() - job.lease / 3 - 0.1

    worker._leases.renew()
    asked: list[list[LeaseRef]] = []
    app.store.extend = lambda leases: asked.append(list(leases)) or []  # type: ignore[method-assign]
    worker._leases.renew()
    assert asked == []  # the lost lease is not asked for again, the other is not due

    assert worker._may_start(kept)
    assert not worker._may_start(taken_back)
    assert app.store.get_job(taken_back.id).state is JobState.QUEUED  # for another claim
    app.close()


def test_a_waiting_job_cancelled_is_reported_cancelled_unrun(tmp_path: Path) -> None:
    """Its time held counts as no run time: the claim-ahead it would skew
    holds as many jobs as before."""
    app = App(f"sqlite:///{tmp_path / 'rota.db'}", lease=30.0)
    app.task(name="echo")(lambda value: value)
    app.tasks["echo"].send(1)
    worker = Worker(app)
    (job,) = worker._claim(1)
    app.admin.cancel_job(job.id)
    worker._flights.inflight[job.id, job.token].renewed = time.monotonic() - job.lease / 3 - 0.1
    worker._leases.renew()  # the renewal tells of the cancel

    assert not worker._may_start(job)
    assert worker._ahead.run is None, "no run time was counted"
    (done,) = worker._flights.reporting.values()  # its outcome waits for the acker
    assert done.job.id == job.id and done.cancelled
    app.close()
