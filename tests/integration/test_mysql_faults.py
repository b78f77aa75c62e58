"""Real ``rota worker`` processes on a private MariaDB server that the tests
harm: one of three workers is killed with SIGKILL, the server is killed
with SIGKILL and started again on the same data under workers and a
scheduler, and the server ends a worker's connections (``KILL
CONNECTION``) twice mid-run.

Every job must end succeeded with its own result, nothing acknowledged may
be lost, only jobs in flight on a victim may run twice, and every process
must reconnect by itself and log an outage once, not once per call.

A proxy also cuts a connection exactly at a commit, before it reaches the
server or instead of its reply. Unlike PostgreSQL, MySQL cannot say
afterwards whether a commit happened: the call fails with
``CommitInDoubt`` (a ``StoreUnavailable``) saying so. A finish made again applies exactly when
the first did not; a claim that did happen hands its job over once the
lease nobody holds runs out, with that attempt recorded lost. Nothing is
lost, and nothing runs twice.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from commit_cutter import MYSQL, CommitCutter
from conformance.support import WORKER, claim_one, get, lease, new_job
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
from mariadb_server import IN_CI, MariaDB, mariadb_server
from procs import Processes
from rota.errors import CommitInDoubt
from rota.models import JobState, Outcome
from rota.stores import Store, open_store

if not IN_CI:  # in CI a missing driver fails the tests
    pytest.importorskip("MySQLdb")

__all__ = ["mariadb_server"]  # fixture

LEASE = 3.0
DATABASE = "faults"
LOST = "lost the MySQL store"
BACK = "is reachable again"
UNKNOWN = "whether the commit happened is not known"


def admin(server: MariaDB, statement: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Run ``statement`` as root on ``server``, behind the stores' back; its rows."""
    import MySQLdb

    conn = MySQLdb.connect(host="127.0.0.1", port=server.port, user="root", autocommit=True)
    try:
        cursor = conn.cursor()
        cursor.execute(statement, params or None)
        return list(cursor.fetchall())
    finally:
        conn.close()  # type: ignore[no-untyped-call]


def as_user(server: MariaDB, name: str) -> str:
    """The store URL of ``server`` for a new database user ``name``, with
    every right: the server lists that user's connections apart."""
    admin(server, f"CREATE USER '{name}'@'%'")
    admin(server, f"GRANT ALL PRIVILEGES ON *.* TO '{name}'@'%'")
    return f"mysql://{name}@127.0.0.1:{server.port}/{DATABASE}"


def connections(server: MariaDB, user: str) -> list[int]:
    """Ids of the server's connections of ``user``."""
    rows = admin(server, "SELECT id FROM information_schema.processlist WHERE user = %s", (user,))
    return sorted(int(row[0]) for row in rows)


def kill_connections(server: MariaDB, user: str) -> None:
    """End every connection of ``user`` (``KILL CONNECTION``), and wait
    until the server has ended them all."""
    import MySQLdb

    ids = set(connections(server, user))
    assert ids, f"{user} has no connection"
    for ident in ids:
        try:
            admin(server, f"KILL CONNECTION {ident}")
        except MySQLdb.OperationalError as exc:
            if exc.args[0] != 1094:  # unknown thread: it ended meanwhile
                raise
    wait_for(lambda: not ids & set(connections(server, user)), 10, 0.05, "them to end")


def ran(log: Path, count: int) -> Callable[[], bool]:
    """A condition to wait for: ``count`` executions are in ``log``."""
    return lambda: len(executions(log)) >= count


def outage_lines(output: str) -> list[str]:
    """The lines a process logged about losing or regaining the store, or
    about a call that failed meanwhile."""
    words = ("MySQL", "failed", "Traceback", "Error", "refused")
    return [line for line in output.splitlines() if any(w in line for w in words)]


@pytest.fixture
def root_url(mariadb_server: MariaDB) -> str:
    return mariadb_server.url(DATABASE)


@pytest.fixture
def mstore(root_url: str) -> Iterator[Store]:
    store = open_store(root_url)
    yield store
    store.close()


@pytest.mark.slow
def test_three_workers_survive_a_kill(
    mariadb_server: MariaDB,
    root_url: str,
    mstore: Store,
    processes: Processes,
    app_path: Callable[[str], str],
    tmp_path: Path,
) -> None:
    started = time.monotonic()
    n = 3_000
    log = tmp_path / "executions.log"
    app = producer(root_url, lease=LEASE)
    ids = send_records(app, n, pause=0.02)
    app.close()
    env = {"ROTA_TEST_LOG": str(log), "ROTA_TEST_LEASE": str(LEASE)}
    killed, *healthy = (
        processes.rota("worker", app_path("counting"), "--url", as_user(mariadb_server, name),
                       "--concurrency", "8", env=env)
        for name in ("killed", "a", "b")
    )  # fmt: skip

    wait_for(lambda: ran_on(log, killed.pid) >= 200, 60, 0.05, "the victim to run jobs")
    # a claim and a finish are several round trips each: kill while the
    # victim holds a job it has not finished (they run 20 ms), not between
    # a finish and a claim
    wait_for(lambda: unfinished(mstore, log, killed.pid), 10, 0.002, "the victim to hold jobs")
    os.kill(killed.pid, signal.SIGKILL)
    killed.wait(10)
    # its last statement, if any, ends once the server sees the connection gone
    wait_for(lambda: not connections(mariadb_server, "killed"), 10, 0.05, "its connections to end")
    in_flight = held_by(mstore, killed.pid)
    assert in_flight, "the killed worker held no job"

    wait_for(lambda: all_succeeded(mstore, n), 90, 0.25, "every job to succeed")

    check_after_a_kill(mstore, ids, log, killed, in_flight, healthy, processes)
    assert time.monotonic() - started < 60


@pytest.mark.slow
def test_workers_and_a_scheduler_ride_out_a_server_crash(
    mariadb_server: MariaDB,
    root_url: str,
    processes: Processes,
    app_path: Callable[[str], str],
    tmp_path: Path,
) -> None:
    started = time.monotonic()

    def crash() -> None:
        mariadb_server.crash()
        mariadb_server.start()

    run = ride_out_a_crash(root_url, crash, processes, app_path, tmp_path, n=3_000, before=500)
    outputs = [processes.output(proc) for proc in [*run.workers, run.scheduler]]
    for out in outputs:
        assert_one_outage_report(out)
    # no attempt was lost, unless a claim's commit was left in doubt: its
    # jobs then wait for their lease to run out (and run once, elsewhere)
    assert sum(j.lost for j in run.jobs) == 0 or any(UNKNOWN in out for out in outputs)
    assert time.monotonic() - started < 60


def assert_one_outage_report(out: str) -> None:
    """The store said at most once that it lost the server and as often
    that it was back (a process that met only connections the restart had
    closed replaces them at once, and reports nothing). Nothing else about
    the outage reached the process, except after a commit left in doubt:
    that call fails (and its caller reports it; the acker sends its
    outcomes again, and the store refuses those already recorded)."""
    assert out.count(LOST) == out.count(BACK) <= 1, out
    if UNKNOWN not in out:
        assert len(outage_lines(out)) == 2 * out.count(LOST), "\n".join(outage_lines(out))


def _log_count(caplog: pytest.LogCaptureFixture, text: str) -> int:
    return sum(text in r.getMessage() for r in caplog.records if r.name == "rota.store")


def test_a_read_rides_out_a_server_restart(
    mariadb_server: MariaDB, mstore: Store, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="rota.store")
    job_id = mstore.enqueue([new_job(7)])[0].id
    mariadb_server.crash()

    def start_once_reported() -> None:
        wait_for(lambda: _log_count(caplog, LOST), 10, 0.01, "the outage to be reported")
        mariadb_server.start()

    restart = threading.Thread(target=start_once_reported)
    restart.start()
    try:
        assert get(mstore, job_id).state is JobState.QUEUED  # waits for the server
    finally:
        restart.join(60)
    assert (_log_count(caplog, LOST), _log_count(caplog, BACK)) == (1, 1)


@pytest.mark.slow
def test_a_worker_whose_connections_are_killed_recovers(
    mariadb_server: MariaDB,
    root_url: str,
    mstore: Store,
    processes: Processes,
    app_path: Callable[[str], str],
    tmp_path: Path,
) -> None:
    started = time.monotonic()
    n = 2_000
    log = tmp_path / "executions.log"
    app = producer(root_url, lease=LEASE)
    ids = send_records(app, n, pause=0.002)
    env = {"ROTA_TEST_LOG": str(log), "ROTA_TEST_LEASE": str(LEASE)}
    url = as_user(mariadb_server, "cut")
    worker = processes.rota("worker", app_path("counting"), "--url", url, "--concurrency", "8",
                            env=env)  # fmt: skip

    for count in (500, 1_000):
        wait_for(ran(log, count), 60, 0.02, "work")
        kill_connections(mariadb_server, "cut")

    wait_for(lambda: all_succeeded(mstore, n), 60, 0.25, "every job to succeed")
    jobs = mstore.get_jobs(list(ids))
    assert all(j is not None and j.result == ids[j.id] for j in jobs)
    runs = Counter(job_id for job_id, _, _ in executions(log))
    assert set(runs) == set(ids)
    # a job ran twice only after an attempt of it was lost (its lease ran out)
    twice = {job_id for job_id, count in runs.items() if count > 1}
    assert twice <= {j.id for j in jobs if j is not None and j.lost}, twice

    # the idle worker still sees new work, and runs a job sent now
    late = app.tasks["record"].send(i=n).id
    wait_for(lambda: all_succeeded(mstore, n + 1), 5, 0.02, "the late job to run")
    app.close()
    assert late in {job_id for job_id, _, _ in executions(log)}
    assert worker.poll() is None, processes.output(worker)

    # a killed connection is replaced at once: an outage, if one is
    # reported, is reported once each way; nothing else reached the log but
    # a commit the kill left in doubt (its call fails and is made again)
    out = processes.output(worker)
    assert out.count(LOST) == out.count(BACK) <= 2, out
    if UNKNOWN not in out:
        assert len(outage_lines(out)) == 2 * out.count(LOST), "\n".join(outage_lines(out))
    assert time.monotonic() - started < 60


@pytest.fixture
def cutter(mariadb_server: MariaDB) -> Iterator[CommitCutter]:
    proxy = CommitCutter(mariadb_server.port, MYSQL)
    yield proxy
    proxy.close()


@pytest.fixture
def cut_store(cutter: CommitCutter) -> Iterator[Store]:
    """A store whose connections go through the proxy."""
    store = open_store(f"mysql://root@127.0.0.1:{cutter.port}/cut")
    yield store
    store.close()


#: Whether the commit went through when the proxy cut it: the request never
#: reached the server; the reply was cut after the server committed.
COMMITTED = {"request": False, "reply": True}


@pytest.mark.parametrize("cut", ["request", "reply"])
def test_a_finish_whose_commit_is_cut_off_counts_once(
    cutter: CommitCutter, cut_store: Store, cut: str
) -> None:
    job = claim_one(cut_store) if cut_store.enqueue([new_job(7)]) else None
    assert job is not None
    cutter.armed = cut
    done = Outcome(job.id, job.token, ok=True, result=b"42")
    with pytest.raises(CommitInDoubt, match=UNKNOWN):  # what workers branch on
        cut_store.finish([done])
    assert cutter.cut.is_set()

    # made again, the finish applies exactly when the first did not
    assert cut_store.finish([done]) == [not COMMITTED[cut]]
    stored = get(cut_store, job.id)
    assert (stored.state, stored.result, stored.attempt) == (JobState.SUCCEEDED, 42, 1)
    assert [h["event"] for h in stored.history] == ["succeeded"]


@pytest.mark.parametrize("cut", ["request", "reply"])
def test_a_claim_whose_commit_is_cut_off_hands_the_job_over(
    cutter: CommitCutter, cut_store: Store, cut: str
) -> None:
    job_id = cut_store.enqueue([new_job(7, lease=1.0)])[0].id
    cutter.armed = cut
    with pytest.raises(CommitInDoubt, match=UNKNOWN):  # what workers branch on
        cut_store.claim(WORKER, ["default"], 1)
    assert cutter.cut.is_set()

    if COMMITTED[cut]:
        # claimed for a token nobody knows: the lease runs out, the attempt
        # is recorded lost, and the job is claimed again
        assert get(cut_store, job_id).state is JobState.RUNNING
        wait_for(lambda: cut_store.recover() == [job_id], 10, 0.05, "the lease to run out")
    # (a cut request's transaction holds the job's row, skipped by claims,
    # until the server sees its connection closed and rolls it back)
    claimed = wait_for(
        lambda: cut_store.claim(WORKER, ["default"], 1), 10, 0.05, "the job to be claimable"
    )
    assert len(claimed) == 1, claimed
    job = claimed[0]
    assert job.id == job_id
    assert (job.attempt, job.lost) == ((2, 1) if COMMITTED[cut] else (1, 0))
    assert cut_store.extend([lease(job)]) == ["held"]
