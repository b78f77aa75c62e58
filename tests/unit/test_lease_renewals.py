"""Which leases the keeper renews: the running jobs' at every renewal (its
answer tells of a cancel), those of jobs held for a slot or waiting for their
report once a third of the lease has passed."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from rota import App
from rota.models import LeaseRef
from rota.stores.base import LeaseStatus
from rota.worker.worker import Worker


def test_running_jobs_are_renewed_each_time_and_held_ones_after_a_third(
    tmp_path: Path,
) -> None:
    app = App(f"sqlite:///{tmp_path / 'rota.db'}", lease=30.0)
    app.task(name="echo")(lambda value: value)
    for n in range(3):
        app.tasks["echo"].send(n)
    asked: list[list[str]] = []
    extend = app.store.extend

    def recorded(leases: Sequence[LeaseRef]) -> list[LeaseStatus]:
        asked.append([lease.job_id for lease in leases])
        return extend(leases)

    app.store.extend = recorded  # type: ignore[method-assign]
    worker = Worker(app)
    running, held, reported = worker._claim(3)
    assert worker._may_start(running) and worker._may_start(reported)
    key = (reported.id, reported.token)
    worker._flights.reporting[key] = worker._flights.inflight.pop(key)

    worker._leases.renew()
    assert asked == [[running.id]]

    for job in (held, reported):
        key = (job.id, job.token)
        flight = worker._flights.inflight.get(key) or worker._flights.reporting[key]
        flight.renewed = time.monotonic() - job.lease / 3 - 0.1
    worker._leases.renew()
    assert sorted(asked[1]) == sorted([running.id, held.id, reported.id])

    worker._leases.renew()  # both just renewed: the running job alone again
    assert asked[2] == [running.id]
    app.close()
