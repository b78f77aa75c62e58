"""The real ``rota`` console script in subprocesses: send, work, stop on SIGTERM."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from conformance.support import enqueue_one, new_job
from helpers import wait_for
from integration.redis_servers import PrivateRedis, private_redis
from rota.models import Job, JobState
from rota.stores import Store, open_store

ROTA = Path(sys.executable).with_name("rota")

APP_SOURCE = """
    import time

    import rota

    app = rota.App()  # the store URL comes from ROTA_URL

    @app.task
    def add(a, b):
        return a + b

    @app.task
    def chain(n):
        return add.send(n, 1).id

    @app.task(queue="slow")
    def nap(seconds):
        time.sleep(seconds)
        return "rested"
"""

__all__ = ["private_redis"]  # a fixture of this module's tests


class RotaCommands:
    """Starts ``rota`` processes; whatever is still running at the end is killed."""

    def __init__(self, cwd: Path, url: str) -> None:
        self.cwd = cwd
        self.env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
        self.env["ROTA_URL"] = url
        self.started: list[subprocess.Popen[str]] = []

    def start(self, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
        proc = subprocess.Popen(
            [str(ROTA), *args],
            cwd=self.cwd,
            env=self.env if env is None else env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.started.append(proc)
        return proc

    def run(self, *args: str, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
        proc = self.start(*args)
        stdout, stderr = proc.communicate(timeout=timeout)
        return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)

    def python(self, code: str) -> subprocess.CompletedProcess[str]:
        """Run Python code the way a user's own program would, from the app's directory."""
        return subprocess.run(
            [sys.executable, "-c", code],
            cwd=self.cwd,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )

    def stop_all(self) -> None:
        for proc in self.started:
            if proc.poll() is None:
                proc.kill()
            proc.communicate(timeout=30)


@pytest.fixture
def url(tmp_path: Path) -> str:
    # Not the default rota.db, so a process that ignores ROTA_URL or --url
    # would write somewhere else.
    return f"sqlite:///{tmp_path / 'store.db'}"


@pytest.fixture
def store(url: str) -> Iterator[Store]:
    opened = open_store(url)
    yield opened
    opened.close()


@pytest.fixture
def procs(tmp_path: Path, url: str) -> Iterator[RotaCommands]:
    assert ROTA.exists(), f"the rota console script is not installed at {ROTA}"
    (tmp_path / "rotaintapp.py").write_text(textwrap.dedent(APP_SOURCE))
    processes = RotaCommands(tmp_path, url)
    yield processes
    processes.stop_all()


def job(store: Store, job_id: str) -> Job:
    found = store.get_job(job_id)
    assert found is not None
    return found


def wait_until_online(store: Store, proc: subprocess.Popen[str]) -> None:
    """A worker sends its first heartbeat after installing its signal handlers."""

    def online() -> bool:
        assert proc.poll() is None, f"worker exited early: {proc.communicate()}"
        return any(w.pid == proc.pid for w in store.workers())

    wait_for(online, timeout=30, interval=0.05, what="the worker's first heartbeat")


def stop(proc: subprocess.Popen[str]) -> tuple[int, str, str]:
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=60)
    return proc.returncode, stdout, stderr


def test_send_then_worker_runs_the_job(procs: RotaCommands, store: Store, url: str) -> None:
    sent = procs.run("send", "rotaintapp.py:app", "add", "2", "3")
    assert sent.returncode == 0, sent.stderr
    job_id = sent.stdout.strip()
    # A program that imports the module sends to the same task names.
    imported = procs.python("import rotaintapp; print(rotaintapp.add.send(a=4, b=5).id)")
    other_id = imported.stdout.strip()
    assert job(store, job_id).state is JobState.QUEUED

    worker = procs.start("worker", "rotaintapp.py:app", "--concurrency", "2")
    wait_for(
        lambda: all(job(store, i).state is JobState.SUCCEEDED for i in (job_id, other_id)),
        timeout=30,
        interval=0.05,
        what="both jobs to succeed",
    )
    assert job(store, job_id).result == 5
    assert job(store, other_id).result == 9

    code, stdout, stderr = stop(worker)
    assert code == 0, stderr
    assert stdout.splitlines()[0] == (
        f"rota worker: store {url}, queues default,slow, concurrency 2, mode threads, "
        f"host {socket.gethostname()}"
    )
    assert "Traceback" not in stderr
    assert store.workers() == []


def test_worker_finishes_running_jobs_on_sigterm(procs: RotaCommands, store: Store) -> None:
    sent = procs.run("send", "rotaintapp.py:app", "nap", "1.0")
    job_id = sent.stdout.strip()
    worker = procs.start("worker", "rotaintapp.py:app", "--queues", "slow,default", "-c", "1")
    wait_until_online(store, worker)
    wait_for(
        lambda: job(store, job_id).state is JobState.RUNNING,
        timeout=30,
        interval=0.02,
        what="the job to start",
    )
    code, stdout, stderr = stop(worker)
    assert code == 0, stderr
    assert "queues slow,default, concurrency 1" in stdout
    finished = job(store, job_id)
    assert finished.state is JobState.SUCCEEDED
    assert finished.result == "rested"
    assert store.workers() == []


def test_process_mode_worker_runs_jobs_and_stops_on_sigterm(
    procs: RotaCommands, store: Store
) -> None:
    worker = procs.start("worker", "rotaintapp.py:app", "--mode", "processes", "-c", "2")
    wait_until_online(store, worker)
    (info,) = store.workers()
    assert (info.mode, info.concurrency, info.queues) == ("processes", 2, ("default", "slow"))
    sent = procs.run("send", "rotaintapp.py:app", "add", "--json", '{"args": [20, 22]}')
    job_id = sent.stdout.strip()
    wait_for(
        lambda: job(store, job_id).state is JobState.SUCCEEDED,
        timeout=60,
        interval=0.05,
        what="the job to succeed in a child process",
    )
    assert job(store, job_id).result == 42
    code, _, stderr = stop(worker)
    assert code == 0, stderr
    assert store.workers() == []


def test_worker_never_prints_the_store_password(procs: RotaCommands) -> None:
    secret = "memcached://admin:hunter2@db.example:11211/0"
    result = procs.run("worker", "rotaintapp.py:app", "--url", secret, timeout=60)
    assert result.returncode == 2
    assert "store memcached://admin:***@db.example:11211/0" in result.stdout
    assert (
        result.stderr.strip()
        .splitlines()[-1]
        .startswith("Error: unsupported store URL scheme 'memcached'")
    )
    assert "hunter2" not in result.stdout + result.stderr
    assert "Traceback" not in result.stderr


def test_bad_input_exit_codes(procs: RotaCommands) -> None:
    missing = procs.run("worker", "nowhere.py:app")
    assert missing.returncode == 2
    assert missing.stderr.strip() == "Error: app file 'nowhere.py' not found"
    unknown = procs.run("send", "rotaintapp:app", "nope")
    assert unknown.returncode == 2
    assert unknown.stderr.startswith("Error: unknown task 'nope' (registered: add, chain, nap)")
    bad_mode = procs.run("worker", "rotaintapp.py:app", "--mode", "fibers")
    assert bad_mode.returncode == 2
    assert "Invalid value for '--mode'" in bad_mode.stderr


def test_url_option_reaches_the_worker_child_processes(
    procs: RotaCommands, store: Store, url: str
) -> None:
    without_env = {k: v for k, v in procs.env.items() if k != "ROTA_URL"}
    worker = procs.start(
        "--url", url, "worker", "rotaintapp.py:app", "--mode", "processes", env=without_env
    )
    wait_until_online(store, worker)
    sent = procs.run("send", "rotaintapp.py:app", "chain", "41")
    first = sent.stdout.strip()
    wait_for(
        lambda: job(store, first).state is JobState.SUCCEEDED,
        timeout=60,
        interval=0.05,
        what="the chain job to succeed",
    )
    second = job(store, first).result
    wait_for(
        lambda: job(store, second).state is JobState.SUCCEEDED,
        timeout=60,
        interval=0.05,
        what="the job the task sent to succeed",
    )
    assert job(store, second).result == 42
    code, _, stderr = stop(worker)
    assert code == 0, stderr
    assert not (procs.cwd / "rota.db").exists()


def test_status_watch_shows_the_store_again_until_ctrl_c(
    procs: RotaCommands, store: Store, tmp_path: Path
) -> None:
    enqueue_one(store, new_job(queue="mail"))
    shown = tmp_path / "status.out"
    with shown.open("w") as out:
        proc = subprocess.Popen(
            [str(ROTA), "status", "--watch", "0.2"], cwd=procs.cwd, env=procs.env, stdout=out
        )
    procs.started.append(proc)  # type: ignore[arg-type]  # (killed at the end if need be)

    def mail_row() -> list[str]:
        rows = [line.split() for line in shown.read_text().splitlines()]
        return [row[4] for row in rows if row[:1] == ["mail"]]  # its queued count, view by view

    wait_for(lambda: mail_row()[-1:] == ["1"], timeout=30, what="a view with the queued job")
    for _ in range(2):
        enqueue_one(store, new_job(queue="mail"))
    wait_for(lambda: mail_row()[-1:] == ["3"], timeout=30, what="a later view with three")
    assert "every 0.2 s · Ctrl-C to stop" in shown.read_text()
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=30) == 0


def test_status_watch_says_when_the_store_does_not_answer_and_goes_on(
    procs: RotaCommands, private_redis: type[PrivateRedis], tmp_path: Path
) -> None:
    server = private_redis()
    url = f"redis://{server.address}/0?retry_for=0.5"
    shown = tmp_path / "status.out"
    with shown.open("w") as out:
        proc = subprocess.Popen(
            [str(ROTA), "status", "-w", "0.2", "--url", url],
            cwd=procs.cwd,
            env=procs.env,
            stdout=out,
        )
    procs.started.append(proc)  # type: ignore[arg-type]  # (killed at the end if need be)
    wait_for(lambda: "no queues yet" in shown.read_text(), timeout=30, what="a first view")
    server.stop()
    wait_for(
        lambda: "the store does not answer" in shown.read_text(),
        timeout=30,
        what="a view that says the store is down",
    )
    server.start()  # (the same port)
    answering = open_store(url)
    try:
        enqueue_one(answering, new_job(queue="mail"))
    finally:
        answering.close()
    wait_for(
        lambda: "\nmail " in shown.read_text().rsplit("does not answer", 1)[1],
        timeout=30,
        what="a view of the store back",
    )
    assert proc.poll() is None
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=30) == 0
