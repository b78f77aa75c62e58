"""The async executor's slots taking turns at the claim on its loop, with a
claim function in place of a worker's: every job runs once, busy slots make
no claim, a cancelled coroutine ends cancelled, and stopping leaves the
claimed jobs no slot started to be released."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import orjson
import pytest

from claims import Claims
from helpers import wait_for
from rota import App
from rota.models import ClaimedJob
from rota.worker.executors import AsyncExecutor
from rota.worker.runner import Result

app = App("sqlite:///:memory:")
started: list[int] = []
release = threading.Event()


@app.task(name="record")
async def record(n: int, block: bool) -> int:
    started.append(n)
    while block and not release.is_set():
        await asyncio.sleep(0.005)
    return n


def job(n: int, *, block: bool = False) -> ClaimedJob:
    return ClaimedJob(
        id=f"j{n}", task="record", queue="default",
        payload=orjson.dumps({"args": [n, block], "kwargs": {}}), attempt=1, max_attempts=1,
        lost=0, token=f"t{n}", lease=30.0, timeout=None, enqueued_at=0.0, run_at=0.0,
        started_at=0.0,
    )  # fmt: skip


@pytest.fixture
def done() -> Iterator[dict[str, Result]]:
    started.clear()
    release.clear()
    yield {}
    release.set()


def slots(claims: Claims, done: dict[str, Result], size: int) -> AsyncExecutor:
    executor = AsyncExecutor(app, size, lambda j, r: done.__setitem__(j.id, r))
    executor.start(claims)
    return executor


def test_every_claimed_job_runs_once(done: dict[str, Result]) -> None:
    claims = Claims([[job(0), job(1), job(2)], [job(3)], [job(4), job(5)]])
    executor = slots(claims, done, 4)
    try:
        wait_for(lambda: len(done) == 6)
        assert sorted(started) == [0, 1, 2, 3, 4, 5]
        assert all(r.ok for r in done.values())
        assert {t for t, _ in claims.calls} == {"rota-claim"}  # claims run off the loop
    finally:
        executor.stop_claiming()
        executor.stop()


def test_busy_slots_make_no_claim_and_a_freed_one_claims_again(done: dict[str, Result]) -> None:
    claims = Claims([[job(0, block=True), job(1, block=True)]])
    executor = slots(claims, done, 2)
    try:
        wait_for(lambda: len(started) == 2)
        calls = len(claims.calls)
        assert calls == 1  # the claim that brought both: no slot is free to claim again
        release.set()
        wait_for(lambda: len(done) == 2)
        wait_for(lambda: len(claims.calls) > calls)
    finally:
        executor.stop_claiming()
        executor.stop()


def test_a_cancelled_coroutine_ends_cancelled_and_its_slot_runs_the_next_job(
    done: dict[str, Result],
) -> None:
    blocked = job(0, block=True)
    claims = Claims([[blocked, job(1)]])
    executor = slots(claims, done, 1)
    try:
        wait_for(lambda: started == [0])
        executor.cancel(blocked)
        wait_for(lambda: len(done) == 2)
        assert done["j0"].error is not None and "JobCancelled" in done["j0"].error
        assert not done["j0"].retryable
        assert done["j1"].ok
    finally:
        executor.stop_claiming()
        executor.stop()


def test_stopping_gives_back_the_claimed_jobs_no_slot_started(done: dict[str, Result]) -> None:
    claims = Claims([[job(0, block=True), job(1), job(2)]])
    executor = slots(claims, done, 1)
    try:
        wait_for(lambda: started == [0])
        executor.stop_claiming()
        assert claims.under_way == 0  # it waited for the claim under way
        assert sorted(j.id for j in executor.take_waiting()) == ["j1", "j2"]
        release.set()
        wait_for(lambda: "j0" in done)
        assert started == [0]
    finally:
        executor.stop()
