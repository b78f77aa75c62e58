"""Real ``rota worker`` processes and a scheduler on a private MariaDB
server that is killed with SIGKILL mid-run and started again on the same
data: every job ends succeeded with its own result and runs once, nothing
acknowledged before the crash is lost, the scheduler fires again, and the
workers reconnect by themselves."""

from __future__ import annotations

import signal
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from helpers import wait_for
from integration.test_postgres_faults import (
    all_succeeded,
    executions,
    fires,
    producer,
    send_records,
    succeeded_of,
)
from mariadb_server import MariaDB, mariadb_server
from procs import Processes
from rota import every
from rota.models import JobState
from rota.stores import open_store

pytest.importorskip("MySQLdb")

__all__ = ["mariadb_server"]  # fixture


@pytest.mark.slow
def test_workers_and_a_scheduler_ride_out_a_server_crash(
    mariadb_server: MariaDB,
    processes: Processes,
    app_path: Callable[[str], str],
    tmp_path: Path,
) -> None:
    started = time.monotonic()
    url = mariadb_server.url("faults")
    n = 2_000
    log = tmp_path / "executions.log"
    app = producer(url, lease=5.0)
    ids = send_records(app, n, pause=0.005)
    app.schedule("tick", "record", every(0.2), kwargs={"i": -1})
    app.close()
    env = {"ROTA_TEST_LOG": str(log), "ROTA_TEST_LEASE": "5"}
    args = ("worker", app_path("counting"), "--url", url, "--concurrency", "4", "--quiet")
    workers = [processes.rota(*args, env=env) for _ in range(2)]
    scheduler = processes.rota("scheduler", app_path("counting"), "--url", url, env=env)
    wait_for(lambda: len(executions(log)) >= 300, 60, 0.05, "work")

    store = open_store(url)
    try:
        acknowledged = succeeded_of(store, ids)
        fired = fires(store)
        assert 0 < len(acknowledged) < n, "the crash must come mid-run"
        assert fired, "the scheduler fired nothing before the crash"

        mariadb_server.crash()
        mariadb_server.start()

        # every finish committed before the crash survived it
        assert acknowledged <= succeeded_of(store, ids)
        wait_for(lambda: fires(store) >= fired + 10, 60, 0.1, "the scheduler to fire again")
        scheduler.send_signal(signal.SIGTERM)
        assert scheduler.wait(15) == 0, processes.output(scheduler)
        total = n + fires(store)
        wait_for(lambda: all_succeeded(store, total), 90, 0.25, "every job to succeed")

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
    assert time.monotonic() - started < 150
