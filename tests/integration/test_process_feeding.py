"""How processes mode feeds its children, with real child processes: while
jobs are short a busy child is sent its next job before its current one
returns; with long jobs it is not; a killed child gives back the job it
never started, which then runs once, in its replacement; a child killed
as its job returns leaves the next job to a fresh one; a job stopped while
it waits in the pipe never starts."""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from collections.abc import Callable

import orjson

from claims import Claims
from helpers import wait_for
from rota import App
from rota.models import ClaimedJob
from rota.worker.executors import ProcessExecutor
from rota.worker.executors.processes import _ProcessSlot
from rota.worker.runner import Result

app = App("sqlite:///:memory:")


@app.task(name="nap")
def nap(seconds: float) -> int:
    """Sleep, then say which process ran the job."""
    time.sleep(seconds)
    return os.getpid()


def job(job_id: str, seconds: float, timeout: float = 30.0) -> ClaimedJob:
    return ClaimedJob(
        id=job_id, task="nap", queue="default", payload=orjson.dumps({"args": [seconds]}),
        attempt=1, max_attempts=1, lost=0, token="t", lease=60.0, timeout=timeout,
        enqueued_at=0.0, run_at=0.0, started_at=0.0,
    )  # fmt: skip


class Feeding:
    """One child's executor, recording when each job is let start and done."""

    def __init__(self, short_jobs: bool) -> None:
        self.events: list[tuple[str, str]] = []
        self.results: dict[str, Result] = {}
        self._lock = threading.Lock()
        self.executor = ProcessExecutor(app, 1, self._done)
        self.executor.may_start = self._may_start
        self.executor.short_jobs = lambda: short_jobs

    def _may_start(self, job: ClaimedJob) -> bool:
        with self._lock:
            self.events.append(("start", job.id))
        return True

    def _done(self, job: ClaimedJob, result: Result) -> None:
        with self._lock:
            self.events.append(("done", job.id))
            self.results[job.id] = result

    def run(self, *jobs: ClaimedJob) -> None:
        """Give the jobs (all waiting before the child starts) and wait for their results."""
        self.executor.start(Claims([list(jobs)]))
        try:
            wait_for(lambda: len(self.results) == len(jobs), timeout=60, what="every result")
        finally:
            self.executor.stop()

    def pid(self, job_id: str) -> int:
        result = self.results[job_id]
        assert result.ok and result.result is not None, result.error
        value: int = orjson.loads(result.result)
        return value


def test_with_short_jobs_a_busy_child_gets_its_next_job_before_the_current_one_returns() -> None:
    feeding = Feeding(short_jobs=True)
    feeding.run(job("a", 0.3), job("b", 0.0))
    assert feeding.events == [("start", "a"), ("start", "b"), ("done", "a"), ("done", "b")]
    assert feeding.pid("a") == feeding.pid("b")


def test_with_long_jobs_a_child_gets_its_next_job_only_once_free() -> None:
    feeding = Feeding(short_jobs=False)
    feeding.run(job("a", 0.3), job("b", 0.0))
    assert feeding.events == [("start", "a"), ("done", "a"), ("start", "b"), ("done", "b")]


def test_a_killed_child_gives_back_the_job_it_never_started() -> None:
    feeding = Feeding(short_jobs=True)
    feeding.run(job("first", 0.0), job("hung", 30.0, timeout=0.5), job("next", 0.0))
    assert feeding.events == [
        ("start", "first"),
        ("start", "hung"),  # sent ahead while "first" runs
        ("done", "first"),
        ("start", "next"),  # sent ahead while "hung" runs
        ("done", "hung"),  # timed out: its child killed, "next" given back
        ("start", "next"),
        ("done", "next"),
    ]
    hung = feeding.results["hung"]
    assert not hung.ok
    assert hung.error == "JobTimeout: timed out after 0.5 s; child process killed"
    assert feeding.pid("next") != feeding.pid("first"), "run by the child's replacement"


def test_a_job_stopped_as_its_result_comes_back_leaves_the_next_job_a_fresh_child() -> None:
    """A job stopped (cancelled, or its lease lost) just as its child sends the
    result back: the result stands, and the next job runs in a fresh child,
    not in the one just killed, where it would fail as a crash."""
    slot = _ProcessSlot(multiprocessing.get_context("fork"), app, None)
    first = job("first", 0.0)
    try:
        slot.send(first)
        assert slot._conn is not None and slot._await_ready(slot._conn), "the child started"
        assert slot._conn.poll(30), "the child answered"
        slot.stop(first)  # its result is in the pipe: the kill comes too late for it
        done, before, unstarted = slot.result()
        assert (done, unstarted) == (first, [])
        assert before.ok, before.error
        slot.send(job("next", 0.0))
        done, after, _ = slot.result()
        assert done.id == "next"
        assert after.ok, after.error
        assert orjson.loads(after.result or b"0") != orjson.loads(before.result or b"0")
    finally:
        slot.kill()


def stop_the_second(
    slot: _ProcessSlot, first: ClaimedJob, second: ClaimedJob, *, once: Callable[[], bool]
) -> tuple[Result, Result]:
    """Send ``first`` and ``second`` (a long job) to ``slot``'s child, stop
    ``second`` once ``once()`` holds, check that ``first`` ends as it would
    and ``second`` ends cancelled at once, then run a next job. Returns the
    results of ``first`` and of the next job (each says its process)."""
    slot.send(first)
    slot.send(second)
    wait_for(once, timeout=30, what="the moment to stop the second job")
    slot.stop(second)
    done, before, unstarted = slot.result()
    assert (done, unstarted) == (first, [])
    assert before.ok, before.error
    asked = time.monotonic()
    done, stopped, unstarted = slot.result()
    assert time.monotonic() - asked < 10, "the stopped job ran on"
    assert (done, unstarted) == (second, [])
    assert not stopped.ok and not stopped.retryable
    assert stopped.error == f"JobCancelled: job {second.id} was cancelled"
    slot.send(job("next", 0.0))
    done, after, _ = slot.result()
    assert done.id == "next" and after.ok, after.error
    return before, after


def test_a_job_stopped_while_it_waits_in_the_pipe_never_starts() -> None:
    """A job sent ahead to a busy child and stopped (cancelled, or its lease
    lost) before the child takes it up: the job before it ends as it would,
    the stopped one ends cancelled without running, and the child stays for
    the next job."""
    slot = _ProcessSlot(multiprocessing.get_context("fork"), app, None)
    try:
        before, after = stop_the_second(
            slot, job("busy", 0.3), job("waiting", 30.0), once=lambda: True
        )
        assert orjson.loads(after.result or b"0") == orjson.loads(before.result or b"0")
    finally:
        slot.kill()


def test_a_job_stopped_just_after_its_child_took_it_up_is_killed_as_it_starts() -> None:
    """The job before returned and the child took the waiting job up just as
    it was stopped, too late to hold it back: the child is killed as the
    job starts, the job ends cancelled at once, and the next job gets a
    fresh child."""
    slot = _ProcessSlot(multiprocessing.get_context("fork"), app, None)
    try:
        before, after = stop_the_second(
            slot, job("first", 0.0), job("taken", 30.0), once=lambda: slot._gate._marks[0] == 2
        )
        assert orjson.loads(after.result or b"0") != orjson.loads(before.result or b"0")
    finally:
        slot.kill()
