"""rota.Snooze: a task that raises it runs again after the delay it asked
for, without using a retry (inline and under a real worker); the crawler's
waits for robots.txt are snoozes; a snooze's reason is not read as an error."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

import rota.testing
from rota import App, Snooze, current_job
from rota._wording import snooze_reason
from rota.crawl import Throttled, TryLater
from rota.crawl.hostrules import _waiting
from rota.errors import InvalidArgument
from rota.models import ClaimedJob, Job, JobState
from rota.worker import runner


@pytest.fixture
def app(tmp_path: Path) -> Iterator[App]:
    value = App(f"sqlite:///{tmp_path / 'rota.db'}")
    yield value
    value.close()


@pytest.mark.parametrize("seconds", [-1, math.nan, math.inf, "soon", True, None])
def test_a_snooze_of_no_usable_duration_is_refused(seconds: object) -> None:
    with pytest.raises(InvalidArgument, match=r"[Ss]nooze"):
        Snooze(seconds, "not yet")  # type: ignore[arg-type]


@pytest.mark.parametrize("seconds", [0, 0.0, "0s", timedelta(0)])
def test_a_snooze_of_no_time_is_refused(seconds: object) -> None:
    """A job snoozed for 0 s would be claimed again at once, over and over (a
    worker busy-looping on it), as timeouts and leases of 0 are refused."""
    with pytest.raises(InvalidArgument, match=r"^snooze seconds must be above 0, got "):
        Snooze(seconds, "not yet")  # type: ignore[arg-type]


def test_a_worker_fails_a_job_that_snoozes_for_no_time(app: App) -> None:
    runs: list[int] = []

    @app.task(retries=0)
    def impatient() -> None:
        runs.append(1)
        raise Snooze(0, "again")

    handle = impatient.send()
    rota.testing.run_until_idle(app, timeout=20)
    job = handle.job()
    assert (job.state, len(runs)) == (JobState.FAILED, 1)
    assert job.error == "InvalidArgument: snooze seconds must be above 0, got 0"


def test_a_snooze_takes_durations_as_every_rota_duration() -> None:
    assert [Snooze(d).seconds for d in (5, 2.5, "5m", timedelta(hours=1))] == [5, 2.5, 300, 3600]


def test_a_snooze_becomes_an_outcome_that_asks_for_its_delay() -> None:
    job = ClaimedJob(
        id="j1", task="t", queue="default", payload=b"{}", attempt=2, max_attempts=2,
        lost=0, token="tok", lease=30.0, timeout=None, enqueued_at=0.0, run_at=0.0,
        started_at=0.0,
    )  # fmt: skip
    result = runner.failure(Snooze(7.5, "the file is not there yet"))
    outcome = runner.to_outcome(job, result)
    assert (outcome.ok, outcome.snooze, outcome.retry_in) == (False, True, 7.5)
    assert outcome.error == "Snooze: the file is not there yet"
    assert outcome.traceback is None
    # an error of any other class is an attempt, which the store counts
    assert runner.to_outcome(job, runner.failure(OSError("reset"))).snooze is False


def test_the_crawlers_waits_are_snoozes_and_a_throttle_is_an_attempt() -> None:
    wait = TryLater("robots.txt of http://a is not read yet", 5.0)
    assert isinstance(wait, Snooze) and wait.seconds == 5.0
    assert str(wait) == "robots.txt of http://a is not read yet"
    assert not isinstance(Throttled("http://a answered 429"), Snooze)


def _robots_job(state: JobState, run_at: float = 0.0) -> Job:
    return Job(
        id="r", task="c.robots", queue="crawl", state=state, args=["http://a"], kwargs={},
        priority=0, run_at=run_at, enqueued_at=0.0, attempt=1, max_attempts=4, lost=0,
    )  # fmt: skip


def test_a_page_waits_for_its_robots_txt_by_the_state_of_its_fetch() -> None:
    assert _waiting(_robots_job(JobState.RUNNING), now=100.0)[1] == 5.0
    assert _waiting(_robots_job(JobState.QUEUED), now=100.0)[1] == 5.0
    assert _waiting(_robots_job(JobState.SCHEDULED, run_at=112.0), now=100.0)[1] == 13.0
    assert _waiting(_robots_job(JobState.SCHEDULED, run_at=90.0), now=100.0)[1] == 1.0
    assert _waiting(_robots_job(JobState.FAILED), now=100.0)[1] == 60.0


def test_inline_a_snoozing_job_runs_again_without_using_a_retry(app: App) -> None:
    attempts: list[int] = []

    @app.task(retries=0)
    def wait_for_file() -> int:
        attempts.append(current_job().attempt)
        if len(attempts) < 3:
            raise Snooze(60, "the file is not there yet")
        return len(attempts)

    with rota.testing.inline(app):
        handle = wait_for_file.send()
        assert handle.result(timeout=1) == 3
        job = handle.job()
    assert attempts == [1, 1, 1]
    assert (job.state, job.attempt) == (JobState.SUCCEEDED, 1)
    assert [(h["event"], h["attempt"]) for h in job.history] == [("succeeded", 1)]
    # the snooze's reason stays after the success, as a worker leaves it (below)
    assert (job.error, job.traceback) == ("Snooze: the file is not there yet", None)


def test_inline_a_job_that_always_snoozes_is_left_waiting(app: App) -> None:
    @app.task
    def never_ready() -> None:
        raise Snooze(3600, "never")

    with rota.testing.inline(app):
        handle = never_ready.send()
        job = handle.job()
    assert job.state is JobState.SCHEDULED
    assert job.error == "Snooze: never"
    assert job.run_at > app.store.now() + 3000
    assert job.attempt == 0


def test_inline_runs_a_job_that_snoozes_briefly_no_more_than_the_skips(app: App) -> None:
    """However short its snooze, one send runs a job that keeps snoozing 1 +
    SNOOZES_SKIPPED times, then leaves it scheduled: it does not run it again
    each time it comes due (send would never return); the other jobs run."""
    runs: list[int] = []

    @app.task
    def restless() -> None:
        runs.append(1)
        if len(runs) > 100:  # the loop did not end: fail, which ends it
            raise RuntimeError("ran 100 times")
        raise Snooze(1e-9, "again")  # due again at once: no later than now

    @app.task
    def other() -> str:
        return "done"

    with rota.testing.inline(app):
        handle = restless.send()
        assert len(runs) == 1 + rota.testing.SNOOZES_SKIPPED
        job = handle.job()  # scheduled, read as queued: due
        assert job.state in (JobState.SCHEDULED, JobState.QUEUED)
        assert (job.attempt, job.error, job.history) == (0, "Snooze: again", ())
        done = other.send()  # runs it, and the snoozing job again, as many times
        assert len(runs) == 2 * (1 + rota.testing.SNOOZES_SKIPPED)
        assert done.status() == "succeeded"


def test_a_worker_runs_a_snoozed_job_again_after_its_delay(app: App) -> None:
    ran: list[float] = []

    @app.task(retries=0)
    def wait_a_little() -> int:
        ran.append(app.store.now())
        if len(ran) == 1:
            raise Snooze(0.5, "not yet")
        return current_job().attempt

    handle = wait_a_little.send()
    rota.testing.run_until_idle(app, timeout=20)
    assert handle.result(timeout=1) == 1
    assert ran[1] - ran[0] >= 0.45
    job = handle.job()
    assert [(h["event"], h["attempt"]) for h in job.history] == [("succeeded", 1)]
    # kept after the success, as inline mode keeps it (Job's docstring; only
    # `rota jobs show` and GET /api/jobs/ID leave a succeeded job's error out)
    assert (job.error, job.traceback) == ("Snooze: not yet", None)


def _shown(state: JobState, error: str | None, *failures: str) -> Job:
    history = tuple(
        {"attempt": i + 1, "event": "failed", "error": e} for i, e in enumerate(failures)
    )
    return dataclasses.replace(_robots_job(state), error=error, history=history)


def test_a_jobs_error_reads_as_a_snooze_when_no_failed_attempt_left_it() -> None:
    assert snooze_reason(_shown(JobState.SCHEDULED, "Snooze: not yet")) == "Snooze: not yet"
    assert snooze_reason(_shown(JobState.SCHEDULED, "Snooze: not yet", "OSError: x")) == (
        "Snooze: not yet"
    )
    assert snooze_reason(_shown(JobState.SCHEDULED, "OSError: x", "OSError: x")) is None
    assert snooze_reason(_shown(JobState.SUCCEEDED, "Snooze: not yet")) == "Snooze: not yet"
    assert snooze_reason(_shown(JobState.FAILED, "worker_lost")) is None
    assert snooze_reason(_shown(JobState.QUEUED, None)) is None


def test_a_job_of_a_task_the_worker_does_not_know_waits_then_fails() -> None:
    """In a rolling deploy an older worker claims jobs of a task only newer
    workers have: the job waits for one, its attempt not counted, and fails
    once it waited UNKNOWN_TASK_PATIENCE from its send, by the store's clock
    (the claim's started_at), not the worker's."""
    job = ClaimedJob(
        id="j1", task="brand.new", queue="default", payload=b"{}", attempt=1, max_attempts=6,
        lost=0, token="tok", lease=30.0, timeout=None, enqueued_at=1_000.0, run_at=1_000.0,
        started_at=1_000.0,
    )  # fmt: skip
    unknown = runner.run_sync(App("sqlite:///:memory:"), job)
    claimed_later = dataclasses.replace(job, started_at=1_000.0 + 599)  # the store's clock
    waiting = runner.to_outcome(job, runner.awaiting_task(claimed_later, unknown))
    assert (waiting.snooze, waiting.retry_in) == (True, runner.UNKNOWN_TASK_RETRY)
    assert waiting.error is not None and waiting.error.startswith("UnknownTask: unknown task")
    assert waiting.error.endswith("(waiting for a worker that has it)")
    claimed_last = dataclasses.replace(job, started_at=1_000.0 + 600)
    failed = runner.to_outcome(job, runner.awaiting_task(claimed_last, unknown))
    assert (failed.snooze, failed.retry_in) == (False, None)  # final: no retry either
    assert failed.error == unknown.error
    # any other error is left as it is
    other = runner.failure(OSError("reset"))
    assert runner.awaiting_task(job, other) is other
