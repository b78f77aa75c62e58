"""Running a job that cannot run, or whose failure cannot be reported as it
is: a precise final failure, and the slot that ran it lives on."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import queue
import signal
import sys
import threading

import pytest

from claims import Claims
from rota import App
from rota.context import cancel_running, current_job
from rota.models import ClaimedJob
from rota.worker import runner
from rota.worker.executors import AsyncExecutor, ThreadExecutor
from rota.worker.runner import Result

app = App("sqlite:///:memory:")


@app.task(name="echo", retries=3)
def echo(value: int) -> int:
    return value


@app.task(name="leave", retries=3)
def leave() -> None:
    sys.exit(2)


class Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no message")


def job(job_id: str, task: str = "echo", payload: bytes = b'{"args": [1]}') -> ClaimedJob:
    return ClaimedJob(
        id=job_id, task=task, queue="default", payload=payload, attempt=1, max_attempts=4,
        lost=0, token="t", lease=30.0, timeout=None, enqueued_at=0.0, run_at=0.0, started_at=0.0,
    )  # fmt: skip


def test_a_corrupt_payload_is_a_final_corrupt_job_failure_logged_as_an_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    result = runner.run_sync(app, job("bad", payload=b'{"args": 5}'))
    assert (result.ok, result.retryable, result.internal) == (False, False, False)
    assert (
        result.error
        == "CorruptJob: job bad has a corrupt payload: 'args' must be a JSON list, got int"
    )
    outcome = runner.to_outcome(job("bad"), result)
    assert outcome.retry_in is None, "not retried"
    assert [(r.levelname, r.name) for r in caplog.records] == [("ERROR", "rota.worker")]


def test_failure_text_a_store_cannot_encode_is_escaped() -> None:
    result = runner.failure(ValueError("name \udcff"))
    assert result.error == "ValueError: name \\udcff"
    assert result.traceback is not None and result.traceback.encode()


def test_an_internal_failure_never_raises_even_for_an_unprintable_error() -> None:
    result = runner.internal_failure(Unprintable(), "a test")
    assert (result.ok, result.retryable, result.internal) == (False, False, True)
    assert result.error == "internal error in a test: Unprintable (unprintable)"
    with pytest.raises(RuntimeError, match="no message"):
        runner.failure(Unprintable())


@app.task(name="interrupt", retries=3)
def interrupt() -> None:
    raise KeyboardInterrupt("from the task")


@app.task(name="leave_async", retries=3, timeout=30)
async def leave_async() -> None:
    await asyncio.sleep(0)
    raise SystemExit(4)


def _is_the_tasks_failure(result: Result, error: str, line: str) -> None:
    """``result`` is a failure of the task's own: retryable, not internal, its traceback kept."""
    assert (result.ok, result.error, result.retryable, result.internal) == (
        False,
        error,
        True,
        False,
    )
    assert result.traceback is not None and line in result.traceback


@pytest.mark.parametrize("executor", [ThreadExecutor, AsyncExecutor])
def test_a_slot_fails_a_task_that_exits_as_its_own_error_and_runs_the_next_job(
    executor: type[ThreadExecutor | AsyncExecutor], caplog: pytest.LogCaptureFixture
) -> None:
    """A task's SystemExit or KeyboardInterrupt is user code failing, not an
    internal error of the worker (which it logs and counts); an ``async def``
    task with a timeout that lets one out does not stop the executor's loop."""
    done: queue.SimpleQueue[tuple[str, Result]] = queue.SimpleQueue()
    pool = executor(app, 1, lambda j, r: done.put((j.id, r)))
    exits = [
        job("exits", task="leave", payload=b"{}"),
        job("interrupted", task="interrupt", payload=b"{}"),
        job("exits_async", task="leave_async", payload=b"{}"),
    ]
    pool.start(Claims([[exits[0]], [exits[1]], [exits[2]], [job("after")]]))
    try:
        results = dict(done.get(timeout=10) for _ in range(4))
    finally:
        pool.stop()
    _is_the_tasks_failure(results["exits"], "SystemExit: 2", "sys.exit(2)")
    _is_the_tasks_failure(
        results["interrupted"], "KeyboardInterrupt: from the task", "raise KeyboardInterrupt"
    )
    _is_the_tasks_failure(results["exits_async"], "SystemExit: 4", "raise SystemExit(4)")
    assert results["after"] == Result(True, result=b"1")
    assert pool.busy() == 0
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_run_sync_lets_a_keyboard_interrupt_out_only_where_a_ctrl_c_may_have_raised_it() -> None:
    """In the main thread of a process where SIGINT raises KeyboardInterrupt
    (inline mode in a test run), it may be a Ctrl-C, and goes on up; in any
    other thread, or where SIGINT is handled (a worker's child process), it
    is the task's own and fails the attempt. SystemExit never goes up."""
    leave_job = job("exits", task="leave", payload=b"{}")
    _is_the_tasks_failure(runner.run_sync(app, leave_job), "SystemExit: 2", "sys.exit(2)")
    interrupt_job = job("interrupted", task="interrupt", payload=b"{}")
    with pytest.raises(KeyboardInterrupt, match="from the task"):
        runner.run_sync(app, interrupt_job)
    previous = signal.signal(signal.SIGINT, lambda signum, frame: None)
    try:
        result = runner.run_sync(app, interrupt_job)
    finally:
        signal.signal(signal.SIGINT, previous)
    _is_the_tasks_failure(result, "KeyboardInterrupt: from the task", "raise KeyboardInterrupt")
    in_thread: list[Result] = []
    thread = threading.Thread(target=lambda: in_thread.append(runner.run_sync(app, interrupt_job)))
    thread.start()
    thread.join(10)
    _is_the_tasks_failure(
        in_thread[0], "KeyboardInterrupt: from the task", "raise KeyboardInterrupt"
    )


@app.task(name="cancel_self")
def cancel_self() -> bool:
    assert cancel_running("t"), "the running attempt is reachable by its token"
    return current_job().cancelled


@app.task(name="cancel_self_then_fail")
def cancel_self_then_fail() -> None:
    assert cancel_running("t")
    raise ValueError("after the cancel")


@pytest.mark.parametrize(
    ("task", "ok"), [("cancel_self", True), ("cancel_self_then_fail", False), ("missing", False)]
)
def test_an_attempt_is_reachable_by_its_token_while_it_runs_and_forgotten_after(
    task: str, ok: bool
) -> None:
    result = runner.run_sync(app, job("c", task=task, payload=b"{}"))
    assert result.ok is ok, result.error
    if ok:
        assert result.result == b"true", "the task saw its own cancel"
    assert cancel_running("t") is False, "nothing of the attempt is left to cancel"


@pytest.mark.parametrize(
    ("timeout", "how", "error"),
    [
        (1, "", "timed out after 1 s"),
        (1.0, "", "timed out after 1 s"),
        (0.5, "cancelled", "timed out after 0.5 s; cancelled"),
        (90.0, "child process killed", "timed out after 90 s; child process killed"),
    ],
)
def test_a_timeout_reads_the_same_whatever_the_store_gave_back(
    timeout: float, how: str, error: str
) -> None:
    late = dataclasses.replace(job("late"), timeout=timeout)
    assert str(runner.timed_out(late, how)) == error
    assert runner.failure(runner.timed_out(late, how)).error == f"JobTimeout: {error}"
