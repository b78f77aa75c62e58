"""Real ``rota worker`` processes on a private PostgreSQL server that the
tests harm: a worker is killed with SIGKILL, the server is crashed and
started again (``pg_ctl stop -m immediate``) under workers and a scheduler,
and a worker's connections are cut with ``pg_terminate_backend``.

Every job must end succeeded with its own result, nothing acknowledged may
be lost, only jobs in flight on a victim may run twice, and every process
must reconnect by itself and log an outage once, not once per call.

A proxy also cuts a connection exactly at a commit, before it reaches the
server or instead of its reply: the store settles whether it happened and
neither loses nor repeats the change.
"""

from __future__ import annotations

import logging
import re
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from commit_cutter import POSTGRES, CommitCutter
from conformance.support import claim_one, get, lease, new_job
from helpers import held_by, wait_for
from integration.crash_runs import (
    all_succeeded,
    check_after_a_kill,
    executions,
    producer,
    ran_on,
    ride_out_a_crash,
    send_records,
    unfinished,
)
from pg_cluster import PgCluster, pg_cluster
from procs import Processes
from rota.models import JobState, Outcome
from rota.stores import Store, open_store

pytest.importorskip("psycopg")

__all__ = ["pg_cluster"]  # fixture

LEASE = 3.0
LOST = "lost the connection to the PostgreSQL store"
BACK = "reconnected to the PostgreSQL store"
UNKNOWN = "whether the commit happened is not known"
#: A line logged by psycopg or its pool (time, level, logger name).
LIBRARY_LINE = re.compile(r"^\S+ \S+ [A-Z]+ psycopg", re.MULTILINE)


@pytest.fixture
def pg_url(pg_cluster: PgCluster) -> str:
    return f"{pg_cluster.url()}?schema=faults"


@pytest.fixture
def pstore(pg_url: str) -> Iterator[Store]:
    store = open_store(pg_url)
    yield store
    store.close()


def backends(cluster: PgCluster, app_name: str) -> list[int]:
    """Server pids of the connections that ``app_name`` holds."""
    out = cluster.psql(
        "SELECT pid FROM pg_stat_activity WHERE pid <> pg_backend_pid() "
        f"AND application_name = '{app_name}' ORDER BY pid"
    )
    return [int(pid) for pid in out.split()]


def listening(cluster: PgCluster, app_name: str) -> bool:
    """Whether ``app_name`` has a connection waiting on LISTEN."""
    out = cluster.psql(
        "SELECT count(*) FROM pg_stat_activity WHERE "
        f"application_name = '{app_name}' AND query LIKE 'LISTEN %'"
    )
    return int(out) > 0


def outage_lines(output: str) -> list[str]:
    """The lines a process logged about losing or regaining the store, or
    about a call that failed meanwhile."""
    words = ("PostgreSQL", "psycopg", "failed", "Traceback", "Error", "refused")
    return [line for line in output.splitlines() if any(w in line for w in words)]


@pytest.mark.slow
def test_three_workers_survive_a_kill(
    pg_cluster: PgCluster,
    pg_url: str,
    pstore: Store,
    processes: Processes,
    app_path: Callable[[str], str],
    tmp_path: Path,
) -> None:
    started = time.monotonic()
    n = 5_000
    log = tmp_path / "executions.log"
    app = producer(pg_url, lease=LEASE)
    ids = send_records(app, n, pause=0.002)
    app.close()
    args = ("worker", app_path("counting"), "--url", pg_url, "--concurrency", "8")
    names = ("rota-killed", "rota-a", "rota-b")
    env = {"ROTA_TEST_LOG": str(log), "ROTA_TEST_LEASE": str(LEASE)}
    killed, *healthy = (processes.rota(*args, env=env | {"PGAPPNAME": a}) for a in names)

    wait_for(lambda: ran_on(log, killed.pid) >= 200, 60, 0.05, "the victim to run jobs")
    # at a moment it holds a job it has not run to the end: one it has run may
    # yet be reported by a finish already sent (SIGSTOP does not stop the server)
    processes.kill_while(killed, lambda: unfinished(pstore, log, killed.pid))
    # its last statement, if any, ends once the server sees the connection gone
    wait_for(lambda: not backends(pg_cluster, "rota-killed"), 10, 0.05, "its connections to end")
    # its jobs still leased to it; on a slow machine some leases may already
    # have run out and been recovered by then: check_after_a_kill adds them
    # from their histories
    in_flight = held_by(pstore, killed.pid)

    wait_for(lambda: all_succeeded(pstore, n), 90, 0.25, "every job to succeed")

    check_after_a_kill(pstore, ids, log, killed, in_flight, healthy, processes)
    assert time.monotonic() - started < 120


@pytest.mark.slow
def test_workers_and_a_scheduler_ride_out_a_server_crash(
    pg_cluster: PgCluster,
    pg_url: str,
    processes: Processes,
    app_path: Callable[[str], str],
    tmp_path: Path,
) -> None:
    started = time.monotonic()
    run = ride_out_a_crash(
        pg_url, lambda: pg_cluster.restart("immediate"), processes, app_path, tmp_path,
        n=3_000, before=500,
    )  # fmt: skip
    outputs = [processes.output(proc) for proc in [*run.workers, run.scheduler]]
    for out in outputs:
        assert_one_outage_report(out)
    # no attempt was lost, unless a claim's commit was left in doubt: its
    # jobs then wait for their lease to run out (and run once, elsewhere)
    assert sum(j.lost for j in run.jobs) == 0 or any(UNKNOWN in out for out in outputs)
    assert time.monotonic() - started < 120


def assert_one_outage_report(out: str) -> None:
    """The store said once that it lost the server and once that it was
    back, and psycopg said nothing. Nothing else about the outage reached
    the process, except after a commit left in doubt: a commit cut off by
    the crash that the restarted server reports as done may be another
    transaction's that was given the same id, so that call fails (and its
    caller reports it, as the acker re-sends its outcomes, which the store
    refuses as already taken)."""
    assert out.count(LOST) == 1, out
    assert out.count(BACK) == 1, out
    assert not LIBRARY_LINE.search(out), out
    doubts = out.count(UNKNOWN)
    if not doubts:
        assert len(outage_lines(out)) == 2, "\n".join(outage_lines(out))
    errors = [line for line in out.splitlines() if " ERROR " in line]
    assert len(errors) <= doubts, out


@pytest.mark.slow
def test_a_worker_whose_connections_are_terminated_recovers(
    pg_cluster: PgCluster,
    pg_url: str,
    pstore: Store,
    processes: Processes,
    app_path: Callable[[str], str],
    tmp_path: Path,
) -> None:
    n = 2_000
    log = tmp_path / "executions.log"
    app = producer(pg_url, lease=LEASE)
    ids = send_records(app, n, pause=0.002)
    env = {"ROTA_TEST_LOG": str(log), "ROTA_TEST_LEASE": str(LEASE), "PGAPPNAME": "rota-cut"}
    args = ("worker", app_path("counting"), "--url", pg_url, "--concurrency", "8")
    worker = processes.rota(*args, env=env)

    for cut in (1, 2):
        wait_for(lambda c=cut: len(executions(log)) >= 500 * c, 60, 0.02, "work")
        before = backends(pg_cluster, "rota-cut")
        assert before, "the worker has no connection"
        pg_cluster.psql(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE application_name = 'rota-cut' AND pid <> pg_backend_pid()"
        )
        wait_for(
            lambda b=before: not set(b) & set(backends(pg_cluster, "rota-cut")),
            10,
            0.05,
            "the connections to end",
        )

    wait_for(lambda: all_succeeded(pstore, n), 60, 0.25, "every job to succeed")
    jobs = pstore.get_jobs(list(ids))
    assert all(j is not None and j.result == ids[j.id] for j in jobs)
    runs = Counter(job_id for job_id, _, _ in executions(log))
    assert set(runs) == set(ids)

    # the idle worker listens for wake-ups again, and runs a job sent now
    wait_for(lambda: listening(pg_cluster, "rota-cut"), 10, 0.05, "the listener to come back")
    late = app.tasks["record"].send(i=n).id
    wait_for(lambda: all_succeeded(pstore, n + 1), 5, 0.02, "the late job to run")
    app.close()
    assert late in {job_id for job_id, _, _ in executions(log)}
    assert worker.poll() is None, processes.output(worker)
    out = processes.output(worker)
    assert 1 <= out.count(LOST) <= 2, out  # one outage per cut at most
    assert out.count(LOST) == out.count(BACK), out
    assert len(outage_lines(out)) == 2 * out.count(LOST), "\n".join(outage_lines(out))


def test_the_store_clock_is_read_through_a_server_crash(
    pg_cluster: PgCluster, pstore: Store, caplog: pytest.LogCaptureFixture
) -> None:
    """A scheduler asks the store's clock before every fire: that read runs
    again on a new connection, and the outage is reported once each way."""
    caplog.set_level(logging.WARNING, logger="rota.store")
    before = pstore.now()
    pg_cluster.restart("immediate")
    assert pstore.now() >= before
    assert (_log_count(caplog, LOST), _log_count(caplog, BACK)) == (1, 1)


@pytest.fixture
def cutter(pg_cluster: PgCluster) -> Iterator[CommitCutter]:
    proxy = CommitCutter(pg_cluster.port, POSTGRES)
    yield proxy
    proxy.close()


def _log_count(caplog: pytest.LogCaptureFixture, text: str) -> int:
    return sum(text in r.getMessage() for r in caplog.records if r.name == "rota.store")


@pytest.mark.parametrize("cut", ["request", "reply"])
def test_a_finish_whose_commit_is_cut_off_counts_once(
    cutter: CommitCutter, cut: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="rota.store")
    store = open_store(f"postgresql://postgres@127.0.0.1:{cutter.port}/postgres?schema=cut")
    try:
        job = claim_one(store) if store.enqueue([new_job(7)]) else None
        assert job is not None
        cutter.armed = cut
        done = Outcome(job.id, job.token, ok=True, result=b"42")
        assert store.finish([done]) == [True]  # applied once, whichever side was cut
        assert cutter.cut.is_set()
        stored = get(store, job.id)
        assert (stored.state, stored.result, stored.attempt) == (JobState.SUCCEEDED, 42, 1)
        assert [h["event"] for h in stored.history] == ["succeeded"]
        assert _log_count(caplog, LOST) == 1
        assert _log_count(caplog, BACK) == 1
    finally:
        store.close()


@pytest.mark.parametrize("cut", ["request", "reply"])
def test_a_claim_whose_commit_is_cut_off_hands_the_job_over(cutter: CommitCutter, cut: str) -> None:
    store = open_store(f"postgresql://postgres@127.0.0.1:{cutter.port}/postgres?schema=cut")
    try:
        job_id = store.enqueue([new_job(7)])[0].id
        cutter.armed = cut
        job = claim_one(store)  # the claim that happened, or the one made again
        assert cutter.cut.is_set()
        assert job.id == job_id
        assert (job.attempt, job.lost) == (1, 0)
        assert store.extend([lease(job)]) == ["held"]
    finally:
        store.close()
