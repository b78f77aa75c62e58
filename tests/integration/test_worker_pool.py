"""``rota worker --processes N``: a real supervisor and its real children."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest

from helpers import appended_lines, wait_for
from procs import ROTA, Processes
from rota import App
from rota.models import JobState
from rota.stores import Store, open_store


def send_records(url: str, n: int, pause: float = 0.0, lease: float = 30.0) -> list[str]:
    app = App(url, lease=lease)
    app.task(name="record")(lambda i, pause=0.0: i)
    handles = app.tasks["record"].send_many([{"i": i, "pause": pause} for i in range(n)])
    app.close()
    return [h.id for h in handles]


def succeeded(store: Store) -> int:
    counts = {q.name: q.counts for q in store.queues()}.get("default", {})
    return counts.get(JobState.SUCCEEDED, 0)


def executions(log: Path) -> Counter[str]:
    return Counter(line.split()[0] for line in appended_lines(log))


@pytest.fixture(params=["sqlite", "redis"])
def backend(request: pytest.FixtureRequest) -> str:
    """The pool runs on SQLite and Redis."""
    return str(request.param)


def children(proc: subprocess.Popen[bytes]) -> set[int]:
    try:
        return {c.pid for c in psutil.Process(proc.pid).children() if c.is_running()}
    except psutil.NoSuchProcess:
        return set()


def two_children(
    pool: subprocess.Popen[bytes], store: Store | None = None, gone: int = 0
) -> set[int] | None:
    """The pool's two child pids once both are up (and, with ``store``, both
    heartbeating), none of them ``gone``; else None."""
    kids = children(pool)
    if len(kids) != 2 or gone in kids:
        return None
    if store is not None and {w.pid for w in store.workers()} != kids:
        return None
    return kids


def test_two_children_claim_and_a_killed_one_is_restarted(
    url: str, store: Store, processes: Processes, app_path: Callable[[str], str], tmp_path: Path
) -> None:
    log = tmp_path / "executions.log"
    env = {"ROTA_TEST_LOG": str(log), "ROTA_TEST_LEASE": "2"}
    pool = processes.rota(
        "worker", app_path("counting"), "--url", url, "--concurrency", "4",
        "--processes", "2", "--grace", "2", env=env,
    )  # fmt: skip
    first = wait_for(
        lambda: two_children(pool, store), timeout=20, interval=0.05,
        what="two children, each with its own heartbeat",
    )  # fmt: skip
    assert len({w.id for w in store.workers()}) == 2
    ids = send_records(url, 600, pause=0.01, lease=2)

    def ran_by(pid: int) -> int:
        lines = appended_lines(log)
        return sum(line.endswith(f" {pid}") for line in lines)

    wait_for(lambda: all(ran_by(p) >= 20 for p in first), timeout=20, what="both children ran")
    victim = min(first)
    os.kill(victim, signal.SIGKILL)
    replaced = wait_for(
        lambda: two_children(pool, gone=victim), timeout=20, interval=0.05,
        what="the killed child restarted",
    )  # fmt: skip
    wait_for(lambda: succeeded(store) == len(ids), timeout=40, interval=0.1, what="all done")
    runs = executions(log)
    assert set(runs) == set(ids), "nothing lost"
    pids = {int(line.split()[2]) for line in appended_lines(log)}
    assert pids <= first | replaced and len(pids & first) == 2
    assert "ended with signal 9" in processes.output(pool)
    assert pool.poll() is None


def start_pool(
    processes: Processes, url: str, store: Store, app: str, log: Path, grace: int
) -> tuple[subprocess.Popen[bytes], set[int]]:
    """A pool of two children of 2 slots each running ``app``, once both
    heartbeat: the supervisor and the children's pids. The jobs that started
    are in ``starts.log`` beside ``log``."""
    env = {"ROTA_TEST_LOG": str(log), "ROTA_TEST_STARTS": str(log.with_name("starts.log"))}
    pool = processes.rota(
        "worker", app, "--url", url, "--concurrency", "2", "--processes", "2",
        "--grace", str(grace), env=env,
    )  # fmt: skip
    kids = wait_for(
        lambda: two_children(pool, store), timeout=20, interval=0.05, what="two children up"
    )
    return pool, kids


def test_sigterm_drains_every_child_within_grace(
    url: str, store: Store, processes: Processes, app_path: Callable[[str], str], tmp_path: Path
) -> None:
    log = tmp_path / "executions.log"
    pool, kids = start_pool(processes, url, store, app_path("counting"), log, 3)
    send_records(url, 40, pause=0.5)
    wait_for(lambda: log.exists(), timeout=10, what="jobs running")
    pool.send_signal(signal.SIGTERM)
    assert pool.wait(3 + 4) == 0, processes.output(pool)
    assert not any(psutil.pid_exists(p) and psutil.Process(p).status() != "zombie" for p in kids)
    assert store.workers() == [], "each child removed its heartbeat"


def running_ids(store: Store, ids: list[str]) -> set[str]:
    jobs = (store.get_job(i) for i in ids)
    return {job.id for job in jobs if job is not None and job.state is JobState.RUNNING}


def test_a_stop_signalled_to_every_process_at_once_drains_every_child(
    url: str, store: Store, processes: Processes, app_path: Callable[[str], str], tmp_path: Path
) -> None:
    """As systemd stops a service: SIGTERM to the supervisor and to each child
    at once. A child takes the supervisor's forwarded signal as the same
    request, not as a second one, and finishes its running jobs."""
    log = tmp_path / "executions.log"
    pool, kids = start_pool(processes, url, store, app_path("counting"), log, 10)
    ids = send_records(url, 40, pause=1.0)

    starts = log.with_name("starts.log")

    def four_running() -> set[str] | None:
        # started, not only claimed: on Redis a job handed to an idle worker
        # is claimed on its way, and a worker stopping then gives it back
        started = set(appended_lines(starts))
        running = started - set(executions(log))
        return running if len(running) == 4 else None

    running = wait_for(four_running, timeout=20, interval=0.02, what="four jobs running")
    for pid in (pool.pid, *kids):
        os.kill(pid, signal.SIGTERM)
    assert pool.wait(10 + 4) == 0, processes.output(pool)
    assert running <= set(executions(log)), "the jobs running at the stop finished"
    assert running_ids(store, ids) == set()
    assert store.workers() == [], "each child removed its heartbeat"
    assert "second signal" not in processes.output(pool)


def test_a_second_signal_kills_the_children_at_once(
    url: str, store: Store, processes: Processes, app_path: Callable[[str], str], tmp_path: Path
) -> None:
    pool, kids = start_pool(processes, url, store, app_path("counting"), tmp_path / "log", 60)
    ids = send_records(url, 4, pause=60.0)
    wait_for(lambda: len(running_ids(store, ids)) == 4, timeout=20, what="four jobs running")
    pool.send_signal(signal.SIGTERM)
    wait_for(
        lambda: "stopping 2 child(ren)" in processes.output(pool), timeout=5,
        what="the supervisor stopping",
    )  # fmt: skip
    pool.send_signal(signal.SIGINT)  # (a SIGTERM again this soon is the same request)
    assert pool.wait(5) == 1, "well within the grace of 60 s"
    assert "second signal: killing the children" in processes.output(pool)
    assert not any(psutil.pid_exists(p) and psutil.Process(p).status() != "zombie" for p in kids)


def test_each_child_exits_as_a_worker_process_does(
    url: str, store: Store, processes: Processes, app_path: Callable[[str], str], tmp_path: Path
) -> None:
    """A child's interpreter exits normally: the app's ``atexit`` handlers run
    in every child, and the supervisor, which never loaded the app, runs none."""
    log = tmp_path / "exits.log"
    pool, kids = start_pool(processes, url, store, app_path("exiting"), log, 3)
    pool.send_signal(signal.SIGTERM)
    assert pool.wait(3 + 4) == 0, processes.output(pool)
    exited = [line.split() for line in log.read_text().splitlines()]
    assert sorted(int(pid) for event, pid in exited if event == "exit") == sorted(kids)


@pytest.mark.parametrize(
    ("value", "message"),
    [("0", "0 is too few"), ("-3", "-3 is too few"), ("many", "'many' is not a number")],
)
def test_bad_processes_values_are_refused(value: str, message: str, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'never.db'}"
    done = subprocess.run(
        [ROTA, "worker", "tests:app", "--url", url, "--processes", value],
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert done.returncode == 2
    assert f"Invalid value for '--processes': {message}" in done.stderr
    assert not (tmp_path / "never.db").exists()


def test_the_documented_pool_benchmark_runs_small(tmp_path: Path) -> None:
    """docs/performance.md's ``bench.py --processes 1,2``, on a few hundred jobs."""
    bench = Path(__file__).resolve().parents[2] / "bench" / "bench.py"
    url = f"sqlite:///{tmp_path / 'bench.db'}"
    done = subprocess.run(
        [sys.executable, str(bench), "--url", url, "--jobs", "300", "--samples", "10",
         "--runs", "1", "--quiet", "--processes", "1,2"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "--processes 1):" in done.stdout and "--processes 2):" in done.stdout
    assert done.stdout.count("drain_per_s") >= 4, done.stdout
    assert done.stdout.count("start_ms") >= 4 and done.stdout.count("pss_mib") >= 4


def test_a_child_that_crashes_at_once_is_restarted_with_doubling_delays(
    processes: Processes, tmp_path: Path
) -> None:
    pool = processes.rota(
        "worker", str(tmp_path / "missing.py") + ":app", "--url", f"sqlite:///{tmp_path}/x.db",
        "--processes", "2",
    )  # fmt: skip
    wait_for(
        lambda: "restarting in 2.0 s" in processes.output(pool), timeout=20, interval=0.05,
        what="a third quick crash of a child",
    )  # fmt: skip
    out = processes.output(pool)
    assert "ended with exit code" in out
    assert "restarting in 0.5 s" in out and "restarting in 1.0 s" in out
    pool.send_signal(signal.SIGTERM)
    assert pool.wait(10) == 0


def test_a_child_that_does_not_drain_is_killed_and_the_pool_exits_1(
    processes: Processes, app_path: Callable[[str], str], tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'pool.db'}"
    pool = processes.rota(
        "worker", app_path("counting"), "--url", url, "--processes", "2", "--grace", "0.5",
        env={"ROTA_TEST_LOG": str(tmp_path / "log")},
    )  # fmt: skip
    store = open_store(url)
    try:  # both heartbeating: past their start, so neither is about to be restarted
        kids = wait_for(lambda: two_children(pool, store), 20, 0.05, "children up")
    finally:
        store.close()
    stuck = min(kids)
    os.kill(stuck, signal.SIGSTOP)  # a stopped child cannot act on SIGTERM
    pool.send_signal(signal.SIGTERM)
    assert pool.wait(0.5 + 5 + 5) == 1
    assert f"child pid {stuck} still running after grace: killing it" in processes.output(pool)
    assert not psutil.pid_exists(stuck) or psutil.Process(stuck).status() == "zombie"


@pytest.mark.parametrize("task", ["slow_close", "deaf"])
def test_the_pool_waits_for_a_child_stopping_a_command_within_its_grace(
    processes: Processes,
    app_path: Callable[[str], str],
    sender_of: Callable[[str, str], App],
    tmp_path: Path,
    task: str,
) -> None:
    """``slow_close`` takes 6 s to close after its SIGTERM, past the pool's
    own margin (grace 0.5 + 5 s) but within its command grace; ``deaf``
    ignores SIGTERM and is killed at the end of its grace of 5 s, as the
    pool's margin ends. Either way the pool waits for the child to give the
    job back once its command is gone, exits 0, and no command outlives it."""
    url = f"sqlite:///{tmp_path / 'pool.db'}"
    marks = tmp_path / "marks"
    handle = sender_of("commands", url).get_task(task).send(extra_args=[str(marks)])
    pool = processes.rota(
        "worker", app_path("commands"), "--url", url, "--processes", "2", "--grace", "0.5",
    )  # fmt: skip
    wait_for(lambda: marks.exists() and marks.read_text().strip(), 20, 0.05, "the command")
    command = int(marks.read_text().split()[0])
    pool.send_signal(signal.SIGTERM)
    assert pool.wait(20) == 0, processes.output(pool)
    assert not psutil.pid_exists(command) or psutil.Process(command).status() == "zombie"
    assert handle.status() == "queued"  # released once its command was gone
    assert "is stopping its commands: waiting" in processes.output(pool)
    assert "still running after grace" not in processes.output(pool)
    if task == "slow_close":
        assert marks.read_text().split()[1:] == ["closed"]
