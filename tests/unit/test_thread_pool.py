"""The thread pool is a sink: it runs the jobs it is given, one per free
slot, reports each, and gives back the ones no slot started."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import orjson
import pytest

from helpers import wait_for
from rota import App
from rota.models import ClaimedJob
from rota.worker.executors import ThreadExecutor
from rota.worker.runner import Result

app = App("sqlite:///:memory:")
ran_on: dict[int, str] = {}  # job number -> thread name
release = threading.Event()


@app.task(name="record")
def record(n: int, block: bool) -> None:
    ran_on[n] = threading.current_thread().name
    if block:
        assert release.wait(10)


def job(n: int, *, block: bool = False) -> ClaimedJob:
    return ClaimedJob(
        id=f"j{n}",
        task="record",
        queue="default",
        payload=orjson.dumps({"args": [n, block], "kwargs": {}}),
        attempt=1,
        max_attempts=1,
        lost=0,
        token="t",
        lease=30.0,
        timeout=None,
        enqueued_at=0.0,
        run_at=0.0,
        started_at=0.0,
    )


@pytest.fixture
def done() -> Iterator[dict[str, Result]]:
    ran_on.clear()
    release.clear()
    yield {}
    release.set()


def pool(done: dict[str, Result], size: int) -> ThreadExecutor:
    executor = ThreadExecutor(app, size, lambda j, r: done.__setitem__(j.id, r))
    executor.start()
    return executor


def test_every_submitted_job_runs_once_on_a_slot_thread(done: dict[str, Result]) -> None:
    executor = pool(done, 4)
    for n in range(12):
        executor.submit(job(n))
    wait_for(lambda: len(done) == 12)
    assert all(r.ok for r in done.values())
    assert set(ran_on) == set(range(12))
    assert {name.rsplit("-", 1)[0] for name in ran_on.values()} == {"rota-slot"}
    wait_for(lambda: executor.busy() == 0)
    executor.stop()


def test_busy_counts_submitted_jobs_until_they_return(done: dict[str, Result]) -> None:
    executor = pool(done, 2)
    executor.submit(job(0, block=True))
    executor.submit(job(1, block=True))
    wait_for(lambda: len(ran_on) == 2)
    assert executor.busy() == 2
    release.set()
    wait_for(lambda: len(done) == 2)
    wait_for(lambda: executor.busy() == 0)
    executor.stop()


def test_jobs_no_slot_started_are_given_back(done: dict[str, Result]) -> None:
    executor = pool(done, 1)
    executor.submit(job(0, block=True))
    wait_for(lambda: 0 in ran_on)
    executor.submit(job(1))
    executor.submit(job(2))
    assert executor.busy() == 3
    waiting = executor.take_waiting()
    assert [j.id for j in waiting] == ["j1", "j2"]
    assert executor.busy() == 1  # the running one
    release.set()
    wait_for(lambda: "j0" in done)
    executor.stop()
    assert set(done) == {"j0"}  # the given-back jobs never ran


def test_a_job_whose_lease_ran_out_is_dropped_unrun(done: dict[str, Result]) -> None:
    executor = pool(done, 1)
    executor.may_start = lambda j: j.id != "j0"
    executor.submit(job(0))
    executor.submit(job(1))
    wait_for(lambda: "j1" in done)
    assert "j0" not in done and 0 not in ran_on
    wait_for(lambda: executor.busy() == 0)
    executor.stop()
