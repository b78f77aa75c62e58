"""A worker and a scheduler whose clocks are an hour ahead of (or behind) the store's.

libfaketime (``LD_PRELOAD``) shifts the wall clock of the ``rota`` processes
only; their monotonic clock stays true (``FAKETIME_DONT_FAKE_MONOTONIC``), as
on a machine whose clock is set wrong. The store's clock is the only clock
for leases, rates, run times and schedules, so the skew must not show:
rate-limited jobs start at the configured rate and jobs longer than their
lease are never recovered as lost (an honest reaper runs throughout), a job
sent with ``send_in(2)`` starts two seconds later, an ``every(1)``
schedule fires every second on time, and a job of a task the worker lacks
waits for a worker that has it (a clock an hour ahead does not make it
look too old to wait). All times are read from the store.

SQLite has no clock of its own: its store clock is the ``time.time()`` of
whichever process calls it (``rota/stores/sqlite/store.py``, ``now()`` and
every verb), so a process whose clock is off runs delayed jobs early or an
hour late and fires schedules an hour off. On one machine all processes
share the clock, so this only shows with a per-process skew such as this
test's; the SQLite runs are expected to fail (strictly) until SQLite gets a
clock shared by every process.
"""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from itertools import pairwise
from pathlib import Path

import pytest

from backends import IN_CI
from helpers import wait_for
from procs import Processes
from rota import App, Rate, every
from rota.models import Job, JobQuery, JobState
from rota.stores import Store

LEASE = 2.0
PAUSE = 2.5  # longer than a lease: the worker must renew
RATE, PACED = 4.0, 12
DELAY = 2.0
TICKS = 5
SKEWS = {"ahead": 3600, "behind": -3600}

pytestmark = pytest.mark.slow


def _libfaketime() -> str:
    found = sorted(glob.glob("/usr/lib/*/faketime/libfaketime.so.1"))
    found += sorted(glob.glob("/usr/local/lib/faketime/libfaketime.so.1"))
    if not found:
        reason = "libfaketime is not installed (Debian: apt-get install faketime)"
        if IN_CI:
            pytest.fail(f"{reason} (CI=true: must not skip)")
        pytest.skip(reason)
    return found[0]


@pytest.fixture(params=sorted(SKEWS), ids=sorted(SKEWS))
def skew(request: pytest.FixtureRequest, store: Store) -> Iterator[dict[str, str]]:
    """The environment of a process whose wall clock is off by an hour."""
    offset = SKEWS[request.param]
    env = {
        "LD_PRELOAD": _libfaketime(),
        "FAKETIME": f"{offset:+d}",
        "FAKETIME_DONT_FAKE_MONOTONIC": "1",
    }
    probe = subprocess.run(
        [sys.executable, "-c", "import time; print(time.time())"],
        env=os.environ | env,
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    assert abs(float(probe.stdout) - store.now() - offset) < 60, "the clock is skewed"
    yield env


@pytest.fixture
def shared_clock(backend: str, request: pytest.FixtureRequest) -> None:
    """Mark the runs whose store has no clock shared between processes."""
    if backend == "sqlite":
        reason = "SQLite's store clock is each process's own time.time()"
        request.applymarker(pytest.mark.xfail(strict=True, reason=reason))


def jobs_of(store: Store, queue: str, state: JobState | None = None) -> list[Job]:
    return list(store.list_jobs(JobQuery(queue=queue, state=state), limit=1000).jobs)


def test_skewed_clocks_do_not_show(
    url: str,
    store: Store,
    shared_clock: None,
    skew: dict[str, str],
    processes: Processes,
    app_path: Callable[[str], str],
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    sender = App(url, lease=LEASE)
    sender.use_store(store)
    step = sender.task(name="step", rate=Rate(RATE, burst=1, key="paced"))(
        lambda i, hold=False, pause=0.0: None
    )
    ticker = App(url)
    ticker.use_store(store)
    tick = ticker.task(name="tick", queue="ticks")(lambda: None)
    ticker.schedule("tick", tick, every(1))

    paced = [h.id for h in step.send_many([{"i": i, "pause": PAUSE} for i in range(PACED)])]
    sent_from = store.now()
    delayed = sender.tasks["step"].options(rate=None).send_in(DELAY, -1).id
    sent_until = store.now()
    # a task only newer workers have: the worker's clock must not make it fail
    # at once (an hour ahead is longer than a job waits for such a worker)
    newer = sender.task(name="newer.only")(lambda: None).send().id

    env = skew | {"ROTA_TEST_LOG": str(tmp_path / "runs.log"), "ROTA_TEST_LEASE": str(LEASE)}
    processes.rota("worker", app_path("chaos"), "--url", url, "--concurrency", "16", env=env)
    processes.rota("scheduler", app_path("chaos"), "--url", url, env=env)

    recovered: list[str] = []

    def done() -> bool:
        recovered.extend(store.recover())  # an honest reaper: must find nothing
        late = store.now() - sent_until > DELAY + 5.0
        if late and store.get_job(delayed).started_at is None:  # type: ignore[union-attr]
            raise AssertionError(f"the job sent with send_in({DELAY}) has not started")
        finished = jobs_of(store, "default", JobState.SUCCEEDED)
        waiting = (store.get_job(newer).error or "").endswith("(waiting for a worker that has it)")  # type: ignore[union-attr]
        return len(finished) == PACED + 1 and len(jobs_of(store, "ticks")) > TICKS and waiting

    wait_for(
        done,
        timeout=30,
        interval=0.1,
        what="the paced jobs, the delayed job, the ticks and the waiting job",
    )
    now = store.now()

    jobs = {job.id: job for job in jobs_of(store, "default")}
    awaiting = jobs.pop(newer)
    assert (awaiting.state, awaiting.attempt) == (JobState.SCHEDULED, 0), awaiting
    starts = sorted(jobs[job_id].started_at or 0.0 for job_id in paced)
    gaps = [b - a for a, b in pairwise(starts)]
    # The first fire may be a catch-up: its time can pass before the scheduler starts.
    ticks = sorted(jobs_of(store, "ticks"), key=lambda job: job.fire_time or 0.0)[1:]
    fires = [job.fire_time or 0.0 for job in ticks]
    delayed_start = (jobs[delayed].started_at or 0.0) - sent_from
    figures = {
        "backend": request.node.callspec.params["backend"],
        "skew_s": SKEWS[request.node.callspec.params["skew"]],
        "paced_jobs": PACED,
        "rate_per_s": RATE,
        "measured_rate_per_s": round((PACED - 1) / (starts[-1] - starts[0]), 2),
        "smallest_gap_s": round(min(gaps), 3),
        "lost_attempts": sum(job.lost for job in jobs.values()),
        "recovered_by_honest_reaper": len(recovered),
        "delayed_started_after_s": round(delayed_start, 2),
        "ticks": len(fires),
        "tick_latest_lag_s": round(max((j.enqueued_at - (j.fire_time or 0.0)) for j in ticks), 3),
        "last_tick_vs_store_now_s": round(fires[-1] - now, 2),
    }
    print("clock figures:", json.dumps(figures))
    (tmp_path / "chaos-clock.json").write_text(json.dumps(figures))

    assert recovered == [] and figures["lost_attempts"] == 0
    assert all(
        job.attempt == 1 and [h["event"] for h in job.history] == ["succeeded"]
        for job in jobs.values()
    )
    # The configured rate, neither faster nor much slower.
    assert min(gaps) >= 1 / RATE - 0.02, gaps
    assert starts[-1] - starts[0] <= (PACED - 1) / RATE + 1.5, gaps
    # send_in(2): not early, not an hour late (a few seconds of slack: a loaded
    # machine may start it late, an hour's skew would not hide in them)
    assert DELAY <= delayed_start <= DELAY + (sent_until - sent_from) + 5.0
    # every(1): one job a second, each enqueued within a second of its fire time,
    # the latest fire a few seconds from the store's now.
    assert [b - a for a, b in pairwise(fires)] == [1.0] * (len(fires) - 1)
    assert all(0 <= job.enqueued_at - (job.fire_time or 0.0) < 1.0 for job in ticks), ticks
    assert -2.0 <= fires[-1] - now <= 1.0
