"""Debug mode with real workers, on every store.

Two ``rota worker`` processes at concurrency 8 take jobs of a task that
always fails from a queue in debug mode. The queue pauses itself at the
first failure: no failure is recorded before the step that paused it, the
job that failed is linked, and no job is claimed after the pause. Jobs that
were already running finish, and their failures are recorded. Times are the
store's own: each ended attempt's history entry and each job's last claim.
"""

from __future__ import annotations

from collections.abc import Callable

from helpers import load_test_app, wait_for
from procs import Processes
from rota.models import JobState, QueueInfo
from rota.stores import Store

WORKERS, CONCURRENCY, JOBS = 2, 8, 100


debugging = load_test_app("debugging")


def queue(store: Store, name: str) -> QueueInfo:
    return {q.name: q for q in store.queues()}.get(name, QueueInfo(name))


def test_a_debug_queue_stops_at_its_first_failure(
    url: str,
    store: Store,
    processes: Processes,
    app_path: Callable[[str], str],
) -> None:
    store.set_queue_mode("default", "debug")
    sending = debugging.sender(url)
    try:
        for _ in range(WORKERS):
            processes.rota(
                "worker", app_path("debugging"), "--url", url,
                "--concurrency", str(CONCURRENCY), "--log-level", "WARNING",
            )  # fmt: skip
        wait_for(lambda: len(store.workers()) >= WORKERS, timeout=30, what="workers up")
        ids = [h.id for h in sending.tasks["broken"].send_many([(n,) for n in range(JOBS)])]

        wait_for(lambda: queue(store, "default").paused, timeout=60, what="the queue to pause")
        wait_for(
            lambda: not queue(store, "default").counts.get(JobState.RUNNING),
            timeout=30,
            what="the jobs already running to finish",
        )
        # both workers serve the other queue too: once its jobs are done, they
        # have been claiming for a while after the pause
        others = sending.tasks["fine"].send_many([(n,) for n in range(2 * WORKERS * CONCURRENCY)])
        wait_for(
            lambda: queue(store, "other").counts.get(JobState.SUCCEEDED) == len(others),
            timeout=60,
            what="the other queue's jobs",
        )
    finally:
        sending.close()

    info = queue(store, "default")
    assert (info.mode, info.paused) == ("paused", True)
    found = store.get_jobs(ids)
    jobs = [job for job in found if job is not None]
    assert len(jobs) == JOBS
    failures = sorted(
        (entry["at"], job.id) for job in jobs for entry in job.history if entry["event"] == "failed"
    )
    linked = [at for at, job_id in failures if job_id == info.debug_job]
    assert len(linked) == 1, f"the linked job {info.debug_job} failed once: {linked}"
    paused_at = linked[0]
    assert failures[0][0] == paused_at, "the failure that paused the queue is the first"
    before = [f for f in failures if f[0] < paused_at]
    assert before == [], "no failure is recorded before the one that paused the queue"

    claimed = [job for job in jobs if job.started_at is not None]
    late = [job.id for job in claimed if job.started_at is not None and job.started_at > paused_at]
    assert late == [], "no job is claimed after the pause"
    waiting = [job for job in jobs if job.started_at is None]
    assert waiting, "the queue stopped short of its last jobs"
    assert {job.state for job in waiting} == {JobState.QUEUED}
    assert {job.attempt for job in waiting} == {0}
