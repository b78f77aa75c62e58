"""A breaker holds its threshold with real workers: two ``rota worker``
processes at concurrency 8 and 40 jobs that always fail behind
``Breaker(3, cooldown=60)``: three attempts fail, then the breaker is open
and the other jobs stay queued."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from helpers import wait_for
from procs import Processes
from rota import App, Breaker
from rota.models import Job, JobQuery, JobState
from rota.stores import Store

JOBS, THRESHOLD, KEY = 40, 3, "down-site"


def send_failing(url: str) -> list[str]:
    app = App(url)
    app.task(name="down", breaker=Breaker(THRESHOLD, 60, key=KEY))(lambda i, pause=0.0: None)
    handles = app.tasks["down"].send_many([{"i": i, "pause": 0.2} for i in range(JOBS)])
    app.close()
    return [h.id for h in handles]


def every_job(store: Store) -> list[Job]:
    jobs: list[Job] = []
    cursor: str | None = None
    while True:
        page = store.list_jobs(JobQuery(), limit=100, cursor=cursor)
        jobs.extend(page.jobs)
        if page.next_cursor is None:
            return jobs
        cursor = page.next_cursor


def breaker_open(store: Store) -> bool:
    found = {info.key: info for info in store.limits()}
    return KEY in found and found[KEY].open_until is not None


def test_two_workers_at_concurrency_8_fail_no_more_than_the_threshold(
    url: str, store: Store, processes: Processes, app_path: Callable[[str], str]
) -> None:
    ids = send_failing(url)
    for _ in range(2):
        processes.rota("worker", app_path("breaking"), "--url", url, "--concurrency", "8")
    wait_for(lambda: len(store.workers()) == 2, timeout=30, what="two workers up")
    wait_for(lambda: breaker_open(store), timeout=60, interval=0.05, what="the breaker opens")

    def settled() -> list[Job]:
        jobs = every_job(store)
        return [] if any(job.state is JobState.RUNNING for job in jobs) else jobs

    jobs = wait_for(settled, timeout=30, interval=0.05, what="no job left running")
    failed_attempts = Counter(
        job.id for job in jobs for entry in job.history if entry.get("event") == "failed"
    )
    assert sum(failed_attempts.values()) == THRESHOLD, failed_attempts
    states = Counter(job.state for job in jobs)
    assert states == {JobState.FAILED: THRESHOLD, JobState.QUEUED: JOBS - THRESHOLD}, states
    assert {job.id for job in jobs} == set(ids)
    assert all(proc.poll() is None for proc in processes.started), "the workers keep running"
