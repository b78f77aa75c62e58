"""First-hour traps with real processes: ``rota worker`` serves every queue of
its app, ``rota send --wait`` prints the result, an unreachable Redis is
reported at once."""

from __future__ import annotations

import json
import subprocess
import textwrap
import time
from pathlib import Path

from helpers import wait_for
from procs import ROTA, Processes

APP = """
    import rota

    app = rota.App("sqlite:///{db}")

    @app.task(queue="crawl")
    def fetch(url):
        return {"url": url}

    @app.task
    def boom():
        raise ValueError("boom")
"""


def _app(tmp_path: Path) -> str:
    path = tmp_path / "trapsint.py"
    path.write_text(textwrap.dedent(APP).replace("{db}", str(tmp_path / "rota.db")))
    return f"{path}:app"


def _run(*args: str, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run([ROTA, *args], capture_output=True, text=True, timeout=timeout)


def test_worker_serves_every_queue_and_send_wait_prints_the_result(
    tmp_path: Path, processes: Processes
) -> None:
    spec = _app(tmp_path)
    worker = processes.rota("worker", spec, "--concurrency", "2")
    line = wait_for(
        lambda: "rota worker: store" in processes.output(worker) and processes.output(worker),
        timeout=30,
        what="the worker's startup line",
    )
    assert "queues crawl,default," in line
    done = _run("send", spec, "fetch", "https://a.example/", "--wait", "--timeout", "30")
    assert done.returncode == 0, done.stderr
    job_id, result = done.stdout.strip().splitlines()
    assert len(job_id) == 32
    assert json.loads(result) == {"url": "https://a.example/"}
    failed = _run("send", spec, "boom", "--wait", "--timeout", "30")
    assert failed.returncode == 1
    assert failed.stderr.strip().endswith("failed: ValueError: boom")


def test_a_command_on_an_unreachable_redis_fails_at_once(tmp_path: Path) -> None:
    url = "redis://127.0.0.1:1/0"  # port 1: nothing listens; retry_for stays 30 s
    started = time.monotonic()
    done = subprocess.run(
        [ROTA, "--url", url, "status"], capture_output=True, text=True, timeout=30
    )
    assert time.monotonic() - started < 10  # not the 30 s a worker would wait
    assert done.returncode == 1
    assert "retrying" not in done.stderr
    assert done.stderr.strip().endswith(
        "the Redis store at redis://127.0.0.1:1/0 is unreachable: "
        "Error 111 connecting to 127.0.0.1:1. Connection refused."
    )
