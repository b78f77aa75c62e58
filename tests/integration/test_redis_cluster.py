"""Three real ``rota worker`` processes on one Redis: one is killed with SIGKILL,
one is frozen with SIGSTOP for longer than its leases and then thawed.

Every job must end succeeded, none may be lost, the thawed worker's late
results must be refused by token fencing, and only jobs that were in flight
on the two victims may have run twice.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from backends import drop_store, store_url
from helpers import wait_for
from integration.crash_runs import executions
from procs import Processes
from rota import App
from rota.models import Job, JobQuery, JobState
from rota.stores import Store, open_store

pytest.importorskip("redis")

N = 20_000
LEASE = 3.0


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:
    value = store_url("redis", tmp_path)
    yield value
    drop_store("redis", value)


@pytest.fixture
def rstore(redis_url: str) -> Iterator[Store]:
    store = open_store(redis_url)
    yield store
    store.close()


def send_records(url: str, n: int) -> dict[str, int]:
    """Send ``record(i)`` for i < n; return job id -> i."""
    app = App(url)
    app.task(name="record")(lambda i, pause=0.0: i)
    ids: dict[str, int] = {}
    for first in range(0, n, 5_000):
        numbers = range(first, min(n, first + 5_000))
        handles = app.tasks["record"].send_many([{"i": i, "pause": 0.002} for i in numbers])
        ids.update({h.id: i for h, i in zip(handles, numbers, strict=True)})
    app.close()
    return ids


def held_by(store: Store, pid: int) -> list[Job]:
    """Running jobs whose lease belongs to the worker process ``pid``."""
    jobs = store.list_jobs(JobQuery(state=JobState.RUNNING), limit=1000).jobs
    return [j for j in jobs if j.worker is not None and f"-{pid}-" in j.worker]


def succeeded(store: Store) -> int:
    counts = {q.name: q.counts for q in store.queues()}.get("default", {})
    return counts.get(JobState.SUCCEEDED, 0)


@pytest.mark.slow
def test_three_workers_survive_a_kill_and_a_freeze(
    redis_url: str,
    rstore: Store,
    processes: Processes,
    app_path: Callable[[str], str],
    tmp_path: Path,
) -> None:
    started = time.monotonic()
    log = tmp_path / "executions.log"
    ids = send_records(redis_url, N)
    env = {"ROTA_TEST_LOG": str(log), "ROTA_TEST_LEASE": str(LEASE)}
    args = ("worker", app_path("counting"), "--url", redis_url, "--concurrency", "8")
    killed, frozen, healthy = (processes.rota(*args, env=env) for _ in range(3))

    def ran_on(pid: int, at_least: int) -> bool:
        rows = executions(log)
        return sum(1 for _, _, p in rows if p == pid) >= at_least

    wait_for(lambda: ran_on(killed.pid, 200) and ran_on(frozen.pid, 200), 60, 0.05, "work")

    os.kill(killed.pid, signal.SIGKILL)
    killed.wait(10)
    in_flight_killed = {j.id for j in held_by(rstore, killed.pid)}

    def settled_holdings() -> list[Job]:
        """The frozen worker's jobs once two reads 0.1 s apart agree: a finish
        it sent just before SIGSTOP may still land, but a stopped process sends
        nothing more. Bounded to 10 s."""
        deadline = time.monotonic() + 10
        view = {j.id for j in held_by(rstore, frozen.pid)}
        while True:
            time.sleep(0.1)
            again = held_by(rstore, frozen.pid)
            if {j.id for j in again} == view:
                return again
            assert time.monotonic() < deadline, "the frozen worker's jobs never settled"
            view = {j.id for j in again}

    in_flight_frozen: list[Job] = []
    for _ in range(5):  # freeze it while it holds jobs
        os.kill(frozen.pid, signal.SIGSTOP)
        in_flight_frozen = settled_holdings()
        if in_flight_frozen:
            break
        os.kill(frozen.pid, signal.SIGCONT)
    assert in_flight_frozen, "the frozen worker never held a job"
    frozen_ids = {j.id for j in in_flight_frozen}

    def moved_on() -> bool:
        now = {j.id: j for j in rstore.get_jobs(list(frozen_ids)) if j is not None}
        return all(j.worker is None or f"-{frozen.pid}-" not in j.worker for j in now.values())

    wait_for(moved_on, timeout=60, interval=0.1, what="the frozen worker's leases to expire")
    os.kill(frozen.pid, signal.SIGCONT)

    wait_for(lambda: succeeded(rstore) == N, timeout=100, interval=0.25, what="all jobs done")

    # nothing lost: every job succeeded with its own result and ran at least once
    jobs = [j for j in rstore.get_jobs(list(ids)) if j is not None]
    assert len(jobs) == N
    assert {j.state for j in jobs} == {JobState.SUCCEEDED}
    assert all(j.result == ids[j.id] for j in jobs)
    runs = Counter(job_id for job_id, _, _ in executions(log))
    assert set(runs) == set(ids)

    # a job ran once more for each victim it was in flight on, never beyond
    pids = {killed.pid: "killed", frozen.pid: "frozen", healthy.pid: "healthy"}
    rows = executions(log)
    for job_id, n in runs.items():
        allowed = 1 + (job_id in in_flight_killed) + (job_id in frozen_ids)
        if n > allowed:
            seen = [(a, pids.get(p, p)) for j, a, p in rows if j == job_id]
            pytest.fail(f"job {job_id} ran {n} times, not {allowed}: (attempt, worker) {seen}")

    # the frozen worker's jobs were recovered as lost attempts ...
    for job in rstore.get_jobs(list(frozen_ids)):
        assert job is not None
        assert job.lost >= 1
        assert any(
            h["event"] == "lost" and f"-{frozen.pid}-" in str(h.get("worker")) for h in job.history
        )

    # ... and what it reported after the thaw was refused by its stale tokens
    def refusals() -> list[str]:
        lines = processes.output(frozen).splitlines()
        return [
            line.split("result of job ", 1)[1].split()[0]
            for line in lines
            if "result of job " in line and "refused" in line
        ]

    refused = wait_for(refusals, timeout=30, what="the thawed worker's stale results refused")
    figures = {
        "jobs": N,
        "kills": 1,
        "freezes_past_the_lease": 1,
        "lost_attempts_recorded": sum(j.lost for j in jobs),
        "executions": sum(runs.values()),
        "duplicate_executions": sum(n - 1 for n in runs.values()),
        "stale_finishes_refused": len(refused),
        "succeeded": len(jobs),
    }
    print("kill and freeze figures:", json.dumps(figures))
    assert set(refused) <= frozen_ids
    assert healthy.poll() is None and frozen.poll() is None
    assert time.monotonic() - started < 120
