"""Bounded, event-driven waiting for tests: poll a condition until a deadline;
what a store says a worker process holds."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from rota.models import JobQuery, JobState
from rota.stores import Store

T = TypeVar("T")


def wait_for(
    condition: Callable[[], T], timeout: float = 10.0, interval: float = 0.01, what: str = ""
) -> T:
    """Return ``condition()``'s first truthy value; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what or condition}")
        time.sleep(interval)


def held_by(store: Store, pid: int) -> set[str]:
    """Ids of running jobs whose lease belongs to the worker process ``pid``."""
    jobs = store.list_jobs(JobQuery(state=JobState.RUNNING), limit=1000).jobs
    return {j.id for j in jobs if j.worker is not None and f"-{pid}-" in j.worker}
