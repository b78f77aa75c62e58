"""A run of real workers and a scheduler through a crash of their database
server, shared by the fault tests of the SQL stores, and the helpers they
share: sending ``record`` jobs of the counting app, reading what ran, and
the checks after a worker was killed (:func:`check_after_a_kill`) and
the moment to kill it (:func:`unfinished`).

:func:`ride_out_a_crash` sends ``n`` jobs and a schedule, starts two workers
and a scheduler, crashes the server mid-run (``crash`` also starts it
again), and checks what every store must keep: no finish acknowledged
before the crash lost, the scheduler firing again, every job succeeded
with its own result and run once, the workers still alive.
"""

from __future__ import annotations

import json
import signal
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from subprocess import Popen

from helpers import appended_lines, held_by, wait_for
from procs import Processes
from rota import App, every
from rota.models import Job, JobQuery, JobState
from rota.stores import Store, open_store


def send_records(app: App, n: int, pause: float) -> dict[str, int]:
    """Send ``record(i)`` for i < n through ``app``; return job id -> i."""
    ids: dict[str, int] = {}
    for first in range(0, n, 5_000):
        numbers = range(first, min(n, first + 5_000))
        handles = app.tasks["record"].send_many([{"i": i, "pause": pause} for i in numbers])
        ids.update({h.id: i for h, i in zip(handles, numbers, strict=True)})
    return ids


def producer(url: str, lease: float = 30.0) -> App:
    """An app that sends the counting app's ``record`` jobs, leased for ``lease`` seconds."""
    app = App(url, lease=lease)
    app.task(name="record")(lambda i, pause=0.0: i)
    return app


def executions(log: Path) -> list[tuple[str, int, int]]:
    """``(job id, attempt, pid)`` per execution the task recorded (a line
    still being written is left for the next look)."""
    rows = []
    for line in appended_lines(log):
        job_id, attempt, pid = line.split()
        rows.append((job_id, int(attempt), int(pid)))
    return rows


def ran_on(log: Path, pid: int) -> int:
    """How many executions worker process ``pid`` recorded."""
    return sum(1 for _, _, p in executions(log) if p == pid)


def unfinished(store: Store, log: Path, pid: int) -> set[str]:
    """Ids of jobs that the worker process ``pid`` holds and has not run to
    the end (the task logs each execution as it ends): killed now, the
    worker leaves them to be recovered as lost, where a job it has run may
    still be reported by a finish already on its way to the server."""
    return held_by(store, pid) - {job_id for job_id, _, _ in executions(log)}


def lost_on(job: Job, pid: int) -> bool:
    """Whether ``job``'s history records an attempt lost on worker process ``pid``."""
    return any(h["event"] == "lost" and f"-{pid}-" in str(h.get("worker")) for h in job.history)


def check_after_a_kill(
    store: Store,
    ids: dict[str, int],
    log: Path,
    killed: Popen[bytes],
    in_flight: set[str],
    healthy: list[Popen[bytes]],
    processes: Processes,
) -> None:
    """Once every job of ``ids`` succeeded after worker ``killed`` was killed
    holding ``in_flight``: nothing lost, each job with its own result; only
    the jobs it held ran twice, each lost attempt in its job's history; the
    other workers alive. (A lease that ran out and was recovered before
    ``in_flight`` was read is found from the histories.) Prints the figures."""
    jobs = [j for j in store.get_jobs(list(ids)) if j is not None]
    in_flight |= {j.id for j in jobs if lost_on(j, killed.pid)}
    assert in_flight, "the killed worker held no job"
    assert len(jobs) == len(ids)
    assert {j.state for j in jobs} == {JobState.SUCCEEDED}
    assert all(j.result == ids[j.id] for j in jobs)
    rows = executions(log)
    runs = Counter(job_id for job_id, _, _ in rows)
    assert set(runs) == set(ids)

    # only the jobs in flight on the killed worker ran twice, and not more
    twice = {job_id for job_id, count in runs.items() if count > 1}
    assert twice <= in_flight, twice - in_flight
    assert max(runs.values()) <= 2
    on_victim = {job_id for job_id, _, pid in rows if pid == killed.pid}
    again = on_victim & twice

    # the attempts lost with the worker are in the jobs' histories
    by_id = {j.id: j for j in jobs}
    for job_id in in_flight:
        job = by_id[job_id]
        assert job.lost == 1 and lost_on(job, killed.pid), job.history
    assert all(lost_on(by_id[job_id], killed.pid) for job_id in again)
    assert sum(j.lost for j in jobs) == len(in_flight)

    for worker in healthy:
        assert worker.poll() is None, processes.output(worker)
    figures = {
        "jobs": len(ids),
        "in_flight_on_the_killed_worker": len(in_flight),
        "ran_there_and_again": len(again),
        "executions": len(rows),
        "lost_attempts_recorded": sum(j.lost for j in jobs),
    }
    print("kill figures:", json.dumps(figures))


def counts(store: Store) -> dict[JobState, int]:
    """Jobs of the default queue by state (states without jobs left out)."""
    found = {q.name: q.counts for q in store.queues()}.get("default", {})
    return {state: n for state, n in found.items() if n}


def all_succeeded(store: Store, total: int) -> bool:
    return counts(store) == {JobState.SUCCEEDED: total}


def succeeded_of(store: Store, ids: dict[str, int]) -> set[str]:
    """Which of the jobs ``ids`` have succeeded."""
    jobs = store.get_jobs(list(ids))
    return {j.id for j in jobs if j is not None and j.state is JobState.SUCCEEDED}


def fires(store: Store) -> int:
    """Jobs the schedule ``tick`` has made so far."""
    total, cursor = 0, None
    while True:
        page = store.list_jobs(JobQuery(schedule="tick"), limit=500, cursor=cursor)
        total += len(page.jobs)
        cursor = page.next_cursor
        if cursor is None:
            return total


@dataclass
class CrashRun:
    """What :func:`ride_out_a_crash` leaves for a store's own checks."""

    jobs: list[Job]
    workers: list[Popen[bytes]]
    scheduler: Popen[bytes]


def ride_out_a_crash(
    url: str,
    crash: Callable[[], None],
    processes: Processes,
    app_path: Callable[[str], str],
    tmp_path: Path,
    n: int,
    before: int,
) -> CrashRun:
    """The run of the module docstring: ``crash()`` comes once ``before``
    jobs ran."""
    log = tmp_path / "executions.log"
    app = producer(url, lease=5.0)
    ids = send_records(app, n, pause=0.005)
    app.schedule("tick", "record", every(0.2), kwargs={"i": -1})
    app.close()
    env = {"ROTA_TEST_LOG": str(log), "ROTA_TEST_LEASE": "5"}
    args = ("worker", app_path("counting"), "--url", url, "--concurrency", "4", "--quiet")
    workers = [processes.rota(*args, env=env) for _ in range(2)]
    scheduler = processes.rota("scheduler", app_path("counting"), "--url", url, env=env)
    wait_for(lambda: len(executions(log)) >= before, 60, 0.05, "work")

    store = open_store(url)
    try:
        acknowledged = succeeded_of(store, ids)
        fired = fires(store)
        assert 0 < len(acknowledged) < n, "the crash must come mid-run"
        assert fired, "the scheduler fired nothing before the crash"
        # A write of ours, acknowledged after that read: once its commit is
        # durable, so is every commit the read saw. (InnoDB shows a commit to
        # other sessions before its log is flushed: a finish the read saw may
        # not have been acknowledged to its worker yet, and a crash then
        # takes it, and the worker sends it again.)
        store.set_limit("crash-marker", 1)

        crash()

        # every finish committed before the crash survived it
        assert acknowledged <= succeeded_of(store, ids)
        wait_for(lambda: fires(store) >= fired + 10, 60, 0.1, "the scheduler to fire again")
        scheduler.send_signal(signal.SIGTERM)
        assert scheduler.wait(15) == 0, processes.output(scheduler)
        total = n + fires(store)
        wait_for(lambda: all_succeeded(store, total), 90, 0.25, "every job to succeed")

        # every job succeeded with its own result, and ran once
        jobs = [j for j in store.get_jobs(list(ids)) if j is not None]
        assert len(jobs) == n
        assert all(j.state is JobState.SUCCEEDED and j.result == ids[j.id] for j in jobs)
        runs = Counter(job_id for job_id, _, _ in executions(log))
        assert set(ids) <= set(runs)
        assert max(runs.values()) == 1, "no job ran twice"
    finally:
        store.close()
    for worker in workers:  # alive, having reconnected by itself
        assert worker.poll() is None, processes.output(worker)
    return CrashRun(jobs, workers, scheduler)
