"""``JobHandle.result(timeout=...)``: a wait that runs out is a ResultTimeout,
told apart from a task that ran over its own timeout (a JobFailed); run on a
real SQLite store in ``tmp_path`` with an in-process worker."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import rota
from rota import JobFailed, JobState, JobTimeout, ResultTimeout
from rota.testing import run_until_idle


@pytest.fixture
def app(tmp_path: Path) -> Iterator[rota.App]:
    value = rota.App(f"sqlite:///{tmp_path / 'rota.db'}")
    yield value
    value.close()


def test_a_wait_that_runs_out_raises_result_timeout_and_leaves_the_job(app: rota.App) -> None:
    @app.task()
    def add(a: int, b: int) -> int:
        return a + b

    handle = add.send(1, 2)  # no worker: it stays queued
    with pytest.raises(ResultTimeout) as caught:
        handle.result(timeout=0.05)
    assert caught.value.job_id == handle.id
    assert str(caught.value).startswith(f"job {handle.id} is still queued after 0.05 s")
    # what a Celery user catches, and what result() raised before: both still work
    assert isinstance(caught.value, TimeoutError)
    assert isinstance(caught.value, JobTimeout)
    assert rota.ResultTimeout is rota.errors.ResultTimeout
    assert handle.job().state is JobState.QUEUED, "the wait ended, not the job"
    run_until_idle(app, timeout=10)
    assert handle.result(timeout=1) == 3


def test_a_task_over_its_own_timeout_is_a_job_failed_not_a_result_timeout(
    app: rota.App,
) -> None:
    @app.task(timeout=0.2)
    def slow() -> None:
        time.sleep(1.0)

    handle = slow.send()
    run_until_idle(app, timeout=10)
    with pytest.raises(JobFailed) as caught:
        handle.result(timeout=5)
    assert not isinstance(caught.value, TimeoutError)
    assert caught.value.error is not None
    assert caught.value.error.startswith("JobTimeout: timed out after 0.2 s")
