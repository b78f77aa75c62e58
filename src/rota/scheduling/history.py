"""What a schedule did and will do: its latest runs, and its next fires."""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rota.models import Job, JobQuery, JobState
from rota.scheduling.triggers import trigger_from_json
from rota.stores.base import Store

__all__ = [
    "LATEST_RUNS",
    "ScheduleRuns",
    "run_time",
    "schedule_runs",
    "sent_no_job",
    "upcoming_fires",
]

#: Runs of one schedule shown by its dashboard page.
LATEST_RUNS = 30

_ENDED = (JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED)


@dataclass(frozen=True, slots=True)
class ScheduleRuns:
    """A schedule's latest jobs, newest first, and what they add up to."""

    jobs: tuple[Job, ...]
    succeeded: int
    failed: int
    #: The median and the longest run time of the finished ones, in seconds.
    median_run: float | None
    longest_run: float | None


def sent_no_job(
    last_fire: float | None, last_job_id: str | None, last_job_fire: float | None
) -> bool:
    """Whether a schedule's last fire sent no job (it was dropped or
    skipped): it has never sent one, or the fire time of the last job it
    sent (``last_job_fire``, None when that job is gone) is older than its
    last fire, which moves on every fire."""
    if last_fire is None:
        return False
    if last_job_id is None:
        return True
    return last_job_fire is not None and last_job_fire < last_fire


def run_time(job: Job, now: float) -> float | None:
    """How long the job's latest attempt ran (a running job: so far); None
    for a job that has not run, or waits to run again."""
    if job.started_at is None:
        return None
    if job.state is JobState.RUNNING:
        return max(0.0, now - job.started_at)
    if job.state not in _ENDED or job.finished_at is None:
        return None  # (it waits to run again: its last start is an earlier attempt's)
    return max(0.0, job.finished_at - job.started_at)


def schedule_runs(store: Store, name: str, limit: int = LATEST_RUNS) -> ScheduleRuns:
    """The latest ``limit`` jobs of schedule ``name`` (its fires and its runs
    sent by hand), with how many ended which way and how long they ran."""
    jobs = store.list_jobs(JobQuery(schedule=name), limit=limit).jobs
    # (ended jobs only: a running one's time so far is no run time yet)
    runs = sorted(t for j in jobs if j.state in _ENDED and (t := run_time(j, 0.0)) is not None)
    return ScheduleRuns(
        jobs=jobs,
        succeeded=sum(j.state is JobState.SUCCEEDED for j in jobs),
        failed=sum(j.state is JobState.FAILED for j in jobs),
        median_run=statistics.median(runs) if runs else None,
        longest_run=runs[-1] if runs else None,
    )


def upcoming_fires(
    trigger: Mapping[str, Any], next_fire: float | None, enabled: bool, count: int = 5
) -> list[float]:
    """The next ``count`` fires of an active schedule, from its stored next
    fire on (none while it is paused; only the stored one when its trigger
    cannot be read)."""
    if not enabled or next_fire is None:
        return []
    try:
        rule = trigger_from_json(trigger)
    except Exception:  # an unknown or newer trigger type: the scheduler knows its next fire
        return [next_fire]
    return rule.fires_from(next_fire, count)
