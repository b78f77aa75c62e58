"""Two attempts of one job in the same worker are two flights. A worker
suspended past a lease can claim the job again (the store gave it back to the
queue) before the slot that ran the stale attempt reports it: that late report
must not end, unrenew or unreport the new attempt."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from rota import App
from rota.models import ClaimedJob, JobState, LeaseRef
from rota.task import JobHandle
from rota.worker import runner
from rota.worker.worker import Worker


@dataclass
class Attempts:
    app: App
    worker: Worker
    handle: JobHandle[int]
    stale: ClaimedJob  # started, then given back to the queue (as a lost lease would)
    fresh: ClaimedJob  # the same job claimed again by the same worker


@pytest.fixture
def attempts(tmp_path: Path) -> Iterator[Attempts]:
    app = App(f"sqlite:///{tmp_path / 'rota.db'}", lease=5.0)
    app.task(name="echo")(lambda value: value)
    handle = app.tasks["echo"].send(7)
    worker = Worker(app)
    (stale,) = worker._claim(1)
    assert worker._may_start(stale)
    app.store.release([LeaseRef(stale.id, stale.token)])
    (fresh,) = worker._claim(1)
    assert (fresh.id, fresh.token != stale.token) == (stale.id, True)
    yield Attempts(app, worker, handle, stale, fresh)
    app.close()


def test_a_stale_attempt_ending_late_leaves_the_new_attempt_of_its_job_alone(
    attempts: Attempts,
) -> None:
    worker, stale, fresh = attempts.worker, attempts.stale, attempts.fresh
    worker._on_done(stale, runner.encode(7))  # the stale attempt ends after the claim

    assert worker._may_start(fresh)
    assert worker.running == 1
    worker._on_done(fresh, runner.encode(7))
    reported = [worker._acker._outcomes.get_nowait() for _ in range(2)]
    assert [done.outcome.token for done in reported] == [stale.token, fresh.token]
    assert worker._acker.report([done.outcome for done in reported]) == [False, True]
    assert attempts.handle.job().state is JobState.SUCCEEDED


def test_a_new_attempt_claimed_while_the_stale_one_runs_is_tracked_apart(
    attempts: Attempts,
) -> None:
    worker, stale, fresh = attempts.worker, attempts.stale, attempts.fresh
    assert worker.running == 2  # both hold a slot until they end
    worker._leases.renew()  # the stale lease is lost, the fresh one renewed
    assert worker._may_start(fresh)
    worker._on_done(fresh, runner.encode(7))
    assert worker.running == 1
    worker._on_done(stale, runner.encode(7))
    assert worker.running == 0


def test_a_renewal_stops_the_attempt_whose_lease_was_lost_and_no_other(
    attempts: Attempts,
) -> None:
    worker, stale, fresh = attempts.worker, attempts.stale, attempts.fresh
    contexts = {job.token: runner.prepare(attempts.app, job)[3] for job in (stale, fresh)}
    assert worker._may_start(fresh)

    worker._leases.renew()

    assert contexts[stale.token].cancelled
    assert not contexts[fresh.token].cancelled
    worker._on_done(fresh, runner.encode(7))
    assert worker._acker.report([worker._acker._outcomes.get_nowait().outcome]) == [True]
    assert attempts.handle.job().state is JobState.SUCCEEDED
