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
from rota import App, cron, every
from rota.models import Job, JobQuery
from rota.scheduling import trigger_from_json
from rota.stores import Store


class Processes(Protocol):
    """The ``processes`` fixture (tests/integration/conftest.py)."""

    def rota(self, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]: ...

    def output(self, proc: subprocess.Popen[bytes]) -> str: ...


SCHEDULERS = 3
KILL_AFTER = 400
FIRES = 1_000


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


# -- rota schedules ... ---------------------------------------------------------------


def run_rota(processes: Processes, *args: str, url: str) -> tuple[int, str]:
    """Run ``rota ARGS`` to its end; its exit code and output, without the
    one-line warnings about the store the CLI prints on stderr (the test
    Redis keeps nothing on disk, which the store warns about)."""
    proc = processes.rota(*args, env={"ROTA_URL": url, "COLUMNS": "200"})
    code = proc.wait(30)
    lines = processes.output(proc).splitlines(keepends=True)
    return code, "".join(line for line in lines if not line.startswith("warning: "))


def define_some(url: str) -> App:
    app = App(url)

    @app.task(name="refresh", queue="pages")
    def refresh(site: str) -> None:
        """Refresh one site."""

    app.schedule("refresh-home", refresh, every(minutes=15), args=("https://example.com",))
    app.schedule(
        "nightly", refresh, cron("0 3 * * *", tz="Asia/Shanghai"), args=("all",), jitter=30
    )
    return app


def test_schedules_list_and_show_describe_them(
    url: str, store: Store, processes: Processes
) -> None:
    define_some(url).close()
    code, out = run_rota(processes, "schedules", "list", url=url)
    assert code == 0, out
    header, *rows = [line for line in out.splitlines() if line.strip()]
    for column in ("name", "task", "trigger", "next fire", "last fire", "last job", "enabled"):
        assert column in header
    assert len(rows) == 2
    assert "every 15 minutes" in rows[1]
    assert rows[1].startswith("refresh-home")
    assert "cron 0 3 * * * (Asia/Shanghai)" in rows[0]

    code, out = run_rota(processes, "schedules", "show", "nightly", url=url)
    assert code == 0, out
    assert re.search(r"jitter\s+30 s", out)
    assert re.search(r"misfire\s+coalesce \(grace none\)", out)
    assert '"queue": "pages"' in out
    assert '"all"' in out


def test_schedules_pause_resume_run_now_and_remove(
    url: str, store: Store, processes: Processes
) -> None:
    define_some(url).close()
    before = {s.name: s for s in store.schedules()}

    assert run_rota(processes, "schedules", "pause", "nightly", url=url)[0] == 0
    assert not {s.name: s for s in store.schedules()}["nightly"].enabled
    code, out = run_rota(processes, "schedules", "list", url=url)
    assert "paused" in next(line for line in out.splitlines() if line.startswith("nightly"))
    assert run_rota(processes, "schedules", "resume", "nightly", url=url)[0] == 0
    assert {s.name: s for s in store.schedules()}["nightly"].enabled

    code, out = run_rota(processes, "schedules", "run-now", "refresh-home", url=url)
    assert code == 0, out
    job = store.get_job(out.strip().splitlines()[-1])
    assert job is not None
    assert (job.task, job.queue, job.args, job.schedule) == (
        "refresh",
        "pages",
        ["https://example.com"],
        "refresh-home",
    )
    assert job.fire_time is not None
    assert abs(job.fire_time - store.now()) < 30
    after = {s.name: s for s in store.schedules()}["refresh-home"]
    assert after.next_fire == before["refresh-home"].next_fire, "run-now does not move it"

    assert run_rota(processes, "schedules", "remove", "nightly", url=url)[0] == 0
    assert [s.name for s in store.schedules()] == ["refresh-home"]


@pytest.mark.parametrize("verb", ["show", "pause", "resume", "remove", "run-now"])
def test_an_unknown_schedule_is_a_precise_error(
    url: str, store: Store, processes: Processes, verb: str
) -> None:
    define_some(url).close()
    code, out = run_rota(processes, "schedules", verb, "nightley", url=url)
    assert code == 1
    assert "Error: no schedule named 'nightley'" in out
    assert len(store.schedules()) == 2
    assert store.list_jobs(JobQuery()).jobs == ()


def test_scheduler_stops_cleanly_on_sigint(
    url: str, store: Store, processes: Processes, app_path: Callable[[str], str]
) -> None:
    proc = processes.rota("scheduler", app_path("scheduled"), "--url", url)
    wait_for(lambda: job_count(store) > 0, timeout=30, interval=0.05, what="a first fire")
    proc.send_signal(signal.SIGINT)
    assert proc.wait(10) == 0, processes.output(proc)
    assert "stopped after firing" in processes.output(proc)
