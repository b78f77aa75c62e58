"""What a schedule's page and ``rota schedules show`` sum up of its latest
jobs: counts by outcome and run times (a median of an even count halfway)."""

from __future__ import annotations

from typing import Any

from helpers import shown_job
from rota.models import JobPage, JobQuery, JobState
from rota.scheduling.history import run_time, schedule_runs


class _Listing:
    """Only the store verb :func:`schedule_runs` reads: a page of jobs."""

    def __init__(self, *jobs: Any) -> None:
        self.jobs = jobs
        self.asked: list[tuple[JobQuery, int]] = []

    def list_jobs(self, query: JobQuery, limit: int = 50, cursor: str | None = None) -> JobPage:
        self.asked.append((query, limit))
        return JobPage(self.jobs, None)


def _ran(seconds: float, state: JobState = JobState.SUCCEEDED, **fields: Any) -> Any:
    return shown_job(state=state, started_at=100.0, finished_at=100.0 + seconds, **fields)


def test_the_median_of_an_even_count_of_runs_is_halfway_between_the_middle_two() -> None:
    listing = _Listing(_ran(2), _ran(26), _ran(4), _ran(22), _ran(3, JobState.FAILED))
    runs = schedule_runs(listing, "nightly", limit=30)  # type: ignore[arg-type]
    assert listing.asked == [(JobQuery(schedule="nightly"), 30)]
    assert (runs.succeeded, runs.failed) == (4, 1)
    assert (runs.median_run, runs.longest_run) == (4.0, 26.0)  # 2, 3, 4, 22, 26
    runs = schedule_runs(_Listing(_ran(2), _ran(26), _ran(4), _ran(22)), "n")  # type: ignore[arg-type]
    assert runs.median_run == 13.0


def test_jobs_that_have_not_run_or_wait_to_run_again_add_no_run_time() -> None:
    waiting = shown_job(state=JobState.QUEUED)
    again = shown_job(state=JobState.SCHEDULED, started_at=100.0, finished_at=101.0)
    running = shown_job(state=JobState.RUNNING, started_at=100.0)
    assert (run_time(waiting, 200.0), run_time(again, 200.0)) == (None, None)
    assert run_time(running, 130.5) == 30.5
    runs = schedule_runs(_Listing(waiting, again, running), "n")  # type: ignore[arg-type]
    assert (runs.succeeded, runs.failed, runs.median_run, runs.longest_run) == (0, 0, None, None)
