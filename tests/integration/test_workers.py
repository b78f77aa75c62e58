"""Real ``rota worker`` processes over thousands of jobs, with kill -9."""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from collections.abc import Callable
from functools import partial
from pathlib import Path

import psutil
import pytest

from helpers import wait_for
from integration import crash_runs
from integration.crash_runs import unfinished
from procs import Processes
from rota import App, Limit
from rota.models import Job, JobQuery, JobState
from rota.stores import Store

N = 5_000


def send_records(
    url: str,
    n: int,
    pause: float = 0.0,
    lease: float = 30.0,
    max_lost: int = 3,
    concurrency: Limit | None = None,
) -> list[str]:
    app = App(url, lease=lease)
    app.task(name="record", max_lost=max_lost, concurrency=concurrency)(lambda i, pause=0.0: i)
    handles = app.tasks["record"].send_many([{"i": i, "pause": pause} for i in range(n)])
    app.close()
    return [h.id for h in handles]


def succeeded(store: Store) -> int:
    counts = {q.name: q.counts for q in store.queues()}.get("default", {})
    return counts.get(JobState.SUCCEEDED, 0)


def all_jobs(store: Store) -> list:  # type: ignore[type-arg]
    jobs, cursor = [], None
    while True:
        page = store.list_jobs(JobQuery(), limit=1000, cursor=cursor)
        jobs.extend(page.jobs)
        if page.next_cursor is None:
            return jobs
        cursor = page.next_cursor


def wait_all_succeeded(store: Store, timeout: float) -> None:
    """Wait until every job succeeded; on timeout, say where the others are."""
    try:
        wait_for(lambda: succeeded(store) == N, timeout=timeout, interval=0.2, what="all jobs done")
    except AssertionError as timed_out:
        others = [j for j in all_jobs(store) if j.state != JobState.SUCCEEDED]
        states = Counter(str(j.state) for j in others)
        shown = [(j.id, j.state, j.attempt, j.lost, j.worker, j.history) for j in others[:5]]
        raise AssertionError(f"{timed_out}; not succeeded: {dict(states)}; {shown}") from None


def executions(log: Path) -> Counter[str]:
    """How many times each job ran (crash_runs.executions, counted by job id)."""
    return Counter(job_id for job_id, _, _ in crash_runs.executions(log))


def print_kill_figures(kills: int, jobs: list[Job], runs: Counter[str]) -> None:
    """What the kills cost, for docs/guarantees.md (``pytest -s`` shows it)."""
    figures = {
        "jobs": N,
        "kills": kills,
        "lost_attempts_recorded": sum(j.lost for j in jobs),
        "executions": sum(runs.values()),
        "duplicate_executions": sum(n - 1 for n in runs.values()),
        "succeeded": len(jobs),
    }
    print("kill figures:", json.dumps(figures))


@pytest.mark.slow
def test_two_workers_run_every_job_exactly_once(
    url: str, store: Store, processes: Processes, app_path: Callable[[str], str], tmp_path: Path
) -> None:
    log = tmp_path / "executions.log"
    ids = send_records(url, N)
    env = {"ROTA_TEST_LOG": str(log)}
    for _ in range(2):
        processes.rota("worker", app_path("counting"), "--url", url, "--concurrency", "4", env=env)
    wait_all_succeeded(store, timeout=180)
    runs = executions(log)
    assert set(runs) == set(ids)
    assert max(runs.values()) == 1
    assert {j.state for j in all_jobs(store)} == {JobState.SUCCEEDED}
    pids = {line.split()[2] for line in log.read_text().splitlines()}
    assert len(pids) == 2, "both workers took part"


@pytest.mark.slow
def test_killed_worker_loses_nothing(
    url: str, store: Store, processes: Processes, app_path: Callable[[str], str], tmp_path: Path
) -> None:
    log = tmp_path / "executions.log"
    ids = send_records(url, N, pause=0.01, lease=2)  # the killed worker's jobs come back soon
    env = {"ROTA_TEST_LOG": str(log), "ROTA_TEST_LEASE": "2"}
    victim = processes.rota(
        "worker", app_path("counting"), "--url", url, "--concurrency", "4", env=env
    )
    processes.rota("worker", app_path("counting"), "--url", url, "--concurrency", "4", env=env)

    def victim_busy() -> bool:
        runs = log.read_text().split("\n") if log.exists() else []
        return sum(line.endswith(f" {victim.pid}") for line in runs) >= 200

    wait_for(victim_busy, timeout=120, interval=0.05, what="the victim ran 200 jobs")
    # at a moment it holds a job it has not run to the end: not between a
    # finish and its next claim, when it holds only jobs a finish already
    # sent may yet report (SIGSTOP does not stop the server)
    processes.kill_while(victim, lambda: unfinished(store, log, victim.pid))
    wait_all_succeeded(store, timeout=180)

    jobs = all_jobs(store)
    assert len(jobs) == N and {j.state for j in jobs} == {JobState.SUCCEEDED}
    lost = [j for j in jobs if j.lost]
    assert lost, "the killed worker's in-flight attempts are recorded as lost"
    for job in lost:
        assert any(h["event"] == "lost" for h in job.history)
        assert job.attempt == job.lost + 1
    runs = executions(log)
    assert set(runs) == set(ids), "every job ran"
    duplicated = [job_id for job_id, n in runs.items() if n > 1]
    print_kill_figures(1, jobs, runs)
    assert len(duplicated) <= len(lost), "only lost attempts may run twice"


#: Worker command lines of every kind: threads, a child process per slot, a pool.
KINDS = (
    ("--concurrency", "4"),
    ("--mode", "processes", "--concurrency", "2"),
    ("--processes", "2", "--concurrency", "2"),
)
KILLS = 9


@pytest.mark.slow
def test_workers_killed_again_and_again_lose_nothing(
    url: str, store: Store, processes: Processes, app_path: Callable[[str], str], tmp_path: Path
) -> None:
    """A worker of each kind, killed with SIGKILL in turn and started again
    (a pool's supervisor takes its children with it), nine kills while the
    jobs drain: every job succeeds with its own result, each attempt the
    kills cut short is recorded as lost, only those run twice, and the
    jobs' concurrency key has none of its slots left taken."""
    log = tmp_path / "executions.log"
    # (a job may be cut short by several kills before its lease runs out;
    # the key's limit is below the workers' slots, so it holds them back)
    key = Limit("killed-again", 6)
    ids = send_records(url, N, pause=0.01, lease=2, max_lost=KILLS + 1, concurrency=key)
    env = {"ROTA_TEST_LOG": str(log), "ROTA_TEST_LEASE": "2"}

    def start(kind: tuple[str, ...]) -> subprocess.Popen[bytes]:
        return processes.rota("worker", app_path("counting"), "--url", url, *kind, env=env)

    def ran() -> int:
        return len(log.read_text().splitlines()) if log.exists() else 0

    def more_than(seen: int) -> Callable[[], bool]:
        return lambda: ran() >= seen + 150

    def unfinished_in(worker: subprocess.Popen[bytes]) -> set[str]:
        """What the worker's processes (a pool's children too) hold unfinished."""
        pids = [worker.pid, *(c.pid for c in psutil.Process(worker.pid).children(recursive=True))]
        return set().union(*(unfinished(store, log, pid) for pid in pids))

    workers = [start(kind) for kind in KINDS]
    for kill in range(KILLS):
        wait_for(more_than(ran()), timeout=120, interval=0.05, what="150 more runs")
        victim = kill % len(KINDS)
        # (at a moment it holds a job it has not run to the end, or a kill
        # of a worker still starting would cut nothing short)
        processes.kill_while(workers[victim], partial(unfinished_in, workers[victim]), timeout=60)
        workers[victim] = start(KINDS[victim])
    wait_all_succeeded(store, timeout=300)

    jobs = all_jobs(store)
    number = {job_id: i for i, job_id in enumerate(ids)}
    assert len(jobs) == N
    assert [j.id for j in jobs if j.result != number[j.id]] == []
    assert sum(j.lost for j in jobs) > 0, "the kills cut attempts short"
    assert [j.id for j in jobs if j.attempt != j.lost + 1] == [], "every lost attempt recorded"
    runs = executions(log)
    assert set(runs) == set(ids), "every job ran"
    lost = {j.id: j.lost for j in jobs}
    assert [job_id for job_id, n in runs.items() if n > lost[job_id] + 1] == []
    print_kill_figures(KILLS, jobs, runs)
    # (a worker's retention pass drops the key once nothing runs under it)
    limit = next((info for info in store.limits() if info.key == "killed-again"), None)
    assert limit is None or limit.running == 0, "the killed workers' slots were given back"
