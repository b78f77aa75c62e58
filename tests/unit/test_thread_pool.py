"""The thread pool claiming for itself (leader and followers), with a claim
function in place of a worker's: which thread runs what, and when it stops."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import orjson
import pytest

from claims import Claims
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


def pool(claims: Claims, done: dict[str, Result], size: int) -> ThreadExecutor:
    executor = ThreadExecutor(app, size, lambda j, r: done.__setitem__(j.id, r))
    executor.start(claims)
    return executor


def test_every_claimed_job_runs_once_and_the_claimer_runs_its_first(
    done: dict[str, Result],
) -> None:
    claims = Claims([[job(0), job(1), job(2)], [job(3)], [job(4), job(5)]])
    executor = pool(claims, done, 4)
    wait_for(lambda: len(done) == 6)
    assert all(r.ok for r in done.values())
    claimers = [thread for thread, _ in claims.calls]
    assert ran_on[0] == claimers[0]  # no hand-over to another thread
    executor.stop_claiming()
    executor.stop()


def test_busy_slots_make_no_claim(done: dict[str, Result]) -> None:
    claims = Claims([[job(0, block=True), job(1, block=True)]])
    executor = pool(claims, done, 2)
    wait_for(lambda: len(ran_on) == 2)
    calls = len(claims.calls)
    assert executor.busy() == 2  # both slots busy: no thread is free to claim
    assert len(claims.calls) == calls
    release.set()
    wait_for(lambda: len(done) == 2)
    wait_for(lambda: len(claims.calls) > calls)  # a freed slot claims again
    executor.stop_claiming()
    executor.stop()


def test_a_failing_claim_costs_a_retry_not_a_thread(done: dict[str, Result]) -> None:
    claims = Claims([])
    claims.fail_next = True
    executor = pool(claims, done, 1)
    wait_for(lambda: claims.idle.is_set())  # the only thread claims again after the error
    claims.batches.append([job(7)])
    wait_for(lambda: "j7" in done)
    executor.stop_claiming()
    executor.stop()


def test_stop_claiming_waits_for_the_claim_under_way(done: dict[str, Result]) -> None:
    claims = Claims([])
    executor = pool(claims, done, 2)
    wait_for(lambda: claims.idle.is_set())
    executor.stop_claiming()
    assert claims.under_way == 0  # it waited for the claim under way
    executor.stop()
