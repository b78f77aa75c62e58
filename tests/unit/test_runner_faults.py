"""Running a job that cannot run, or whose failure cannot be reported as it
is: a precise final failure, and the slot that ran it lives on."""

from __future__ import annotations

import queue
import sys

import pytest

from claims import Claims
from rota import App
from rota.context import cancel_running, current_job
from rota.models import ClaimedJob
from rota.worker import runner
from rota.worker.executors import ThreadExecutor
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


def test_a_thread_slot_survives_a_task_that_exits_and_runs_the_next_job() -> None:
    done: queue.SimpleQueue[tuple[str, Result]] = queue.SimpleQueue()
    pool = ThreadExecutor(app, 1, lambda j, r: done.put((j.id, r)))
    pool.start(Claims([[job("exits", task="leave", payload=b"{}"), job("after")]]))
    try:
        first, second = done.get(timeout=10), done.get(timeout=10)
    finally:
        pool.stop()
    assert first[0] == "exits" and first[1].internal and not first[1].retryable
    assert first[1].error == "internal error in a thread slot: SystemExit: 2"
    assert second == ("after", Result(True, result=b"1"))
    assert pool.busy() == 0


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
