"""Three real ``rota scheduler`` processes on one store, one killed with SIGKILL mid-run.

Over thousands of fires every fire makes exactly one job: none doubled by the
race between schedulers, none missed when one of them dies.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
from collections import Counter, defaultdict
from collections.abc import Callable
from typing import Protocol

import pytest

from helpers import wait_for
from rota.models import Job, JobQuery
from rota.scheduling import trigger_from_json
from rota.stores import Store


class Processes(Protocol):
    """The ``processes`` fixture (tests/integration/conftest.py)."""

    def rota(self, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]: ...

    def output(self, proc: subprocess.Popen[bytes]) -> str: ...


SCHEDULERS = 3
KILL_AFTER = 1_000
FIRES = 2_100


def all_jobs(store: Store) -> list[Job]:
    jobs: list[Job] = []
    cursor: str | None = None
    while True:
        page = store.list_jobs(JobQuery(), limit=1000, cursor=cursor)
        jobs.extend(page.jobs)
        if page.next_cursor is None:
            return jobs
        cursor = page.next_cursor


def job_count(store: Store) -> int:
    return sum(sum(info.counts.values()) for info in store.queues())


def fired_at_least(
    store: Store, count: int, procs: list[subprocess.Popen[bytes]], processes: Processes
) -> Callable[[], bool]:
    """A wait condition that also fails at once if a scheduler exited."""

    def check() -> bool:
        for proc in procs:
            if proc.poll() is not None:
                raise AssertionError(f"a scheduler exited early:\n{processes.output(proc)}")
        return job_count(store) >= count

    return check


@pytest.mark.slow
def test_three_schedulers_fire_every_time_exactly_once_despite_a_kill(
    url: str, store: Store, processes: Processes, app_path: Callable[[str], str]
) -> None:
    env = {"ROTA_URL": url}
    procs = [
        processes.rota("scheduler", app_path("scheduled"), "--log-level", "warning", env=env)
        for _ in range(SCHEDULERS)
    ]
    wait_for(fired_at_least(store, KILL_AFTER, procs, processes), timeout=60, interval=0.2)
    victim, survivors = procs[0], procs[1:]
    os.killpg(victim.pid, signal.SIGKILL)
    assert victim.wait(10) == -signal.SIGKILL
    at_kill = job_count(store)
    wait_for(fired_at_least(store, FIRES, survivors, processes), timeout=60, interval=0.2)
    for proc in survivors:
        proc.send_signal(signal.SIGTERM)
    for proc in survivors:
        assert proc.wait(15) == 0, processes.output(proc)

    jobs = all_jobs(store)
    assert len(jobs) >= FIRES
    assert len(jobs) - at_kill >= FIRES - KILL_AFTER - 100, "fires went on after the kill"
    by_schedule: dict[str, Counter[float]] = defaultdict(Counter)
    for job in jobs:
        assert job.schedule is not None
        assert job.fire_time is not None
        by_schedule[job.schedule][job.fire_time] += 1
    schedules = {s.name: s for s in store.schedules()}
    assert set(by_schedule) == set(schedules)
    for name, counts in by_schedule.items():
        doubled = {t: n for t, n in counts.items() if n > 1}
        assert not doubled, f"{name}: {len(doubled)} fire(s) with several jobs"
        trigger = trigger_from_json(schedules[name].trigger)
        fires = sorted(counts)
        expected = [fires[0]]
        while (following := trigger.next_fire(expected[-1])) is not None and following <= fires[-1]:
            expected.append(following)
        missed = sorted(set(expected) - set(fires))
        assert not missed, f"{name}: {len(missed)} missed fire(s), first {missed[:3]}"
        assert fires == expected
        assert schedules[name].last_fire == fires[-1]
        assert schedules[name].next_fire == trigger.next_fire(fires[-1])

    for proc in survivors:
        output = processes.output(proc)
        assert "Traceback" not in output, output
        fired = re.search(r"stopped after firing (\d+) job", output)
        assert fired is not None, output
        assert int(fired.group(1)) > 0, "every surviving scheduler won some fires"
