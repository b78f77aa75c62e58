"""A real ``rota worker``, in every mode, given jobs whose stored payload is
corrupt and a task whose failure breaks the code reporting it: each such job
fails at once, every good job succeeds, and the worker keeps serving."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from backends import overwrite_job
from helpers import wait_for
from procs import Processes
from rota import App
from rota.models import Job, JobState, WorkerInfo

SLOTS = 2
CORRUPT = [
    b'{"args": ["\xff"]}',
    b'{"args": [1',
    b"[1, 2]",
    b"null",
    b'{"args": 5}',
    b'{"kwargs": []}',
]


@pytest.fixture
def sender(sender_of: Callable[[str, str], App], url: str) -> App:
    """The faults app, sending to the test's store."""
    return sender_of("faults", url)


def finished(app: App, ids: list[str]) -> list[Job] | None:
    """The jobs, once every one of them has ended."""
    jobs = app.store.get_jobs(ids)
    done = (JobState.SUCCEEDED, JobState.FAILED)
    if all(job is not None and job.state in done for job in jobs):
        return [job for job in jobs if job is not None]
    return None


def the_worker(app: App) -> WorkerInfo | None:
    workers = app.store.workers()
    return workers[0] if len(workers) == 1 else None


@pytest.mark.parametrize("mode", ["threads", "processes", "async"])
def test_corrupt_jobs_fail_at_once_and_the_worker_keeps_serving(
    mode: str,
    backend: str,
    url: str,
    sender: App,
    processes: Processes,
    app_path: Callable[[str], str],
) -> None:
    echo = sender.tasks["echo"]
    corrupt = [echo.send(i).id for i in range(len(CORRUPT))]
    for job_id, raw in zip(corrupt, CORRUPT, strict=True):
        overwrite_job(backend, url, job_id, raw)
    good = [echo.send(100 + i).id for i in range(4)]
    broken = sender.tasks["unprintable"].send().id
    odd_text = sender.tasks["undecodable_name"].send().id

    worker = processes.rota(
        "worker", app_path("faults"), "--url", url, "--mode", mode, "--concurrency", str(SLOTS),
        "--heartbeat", "0.5",  # the counts below are read from a heartbeat
    )  # fmt: skip
    jobs = wait_for(
        lambda: finished(sender, [*corrupt, *good, broken, odd_text]), 60, 0.05, "every job"
    )
    by_id = {job.id: job for job in jobs}

    for job_id in corrupt:
        job = by_id[job_id]
        assert job.state is JobState.FAILED, job
        assert job.attempt == 1, "a corrupt job is not retried"
        assert job.error is not None and job.error.startswith("CorruptJob: "), job.error
        assert f"job {job_id} has a corrupt payload" in job.error
    assert [by_id[j].result for j in good] == [100, 101, 102, 103]
    failed = by_id[broken]
    assert (failed.state, failed.attempt) == (JobState.FAILED, 1)
    assert failed.error is not None and failed.error.startswith("internal error in "), failed.error
    assert "this exception cannot be printed" in failed.error
    named = by_id[odd_text]
    assert named.state is JobState.FAILED
    assert named.error == "FileNotFoundError: no such file: report-\\udcff.csv"

    assert echo.send(7).result(timeout=30) == 7, "the worker still serves after the faults"
    counts = (len(good) + 1, len(CORRUPT) + 2, 1)  # processed, failed, survived errors
    wait_for(
        lambda: (w := the_worker(sender)) and (w.processed, w.failed, w.errors) == counts,
        30,
        0.1,
        f"a heartbeat with processed, failed, errors = {counts}",
    )
    assert worker.poll() is None, "the worker is still running"
    log = processes.output(worker)
    for job_id in corrupt:
        assert f"ERROR rota.worker: job {job_id} (echo) cannot run: job {job_id}" in log
    assert "survived an unexpected error" in log and "Traceback" in log
    assert "Exception in thread" not in log
    worker.terminate()
    assert worker.wait(30) == 0
    assert sender.store.workers() == []
