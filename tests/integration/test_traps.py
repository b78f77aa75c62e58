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


def test_an_unreachable_redis_is_reported_at_once(tmp_path: Path) -> None:
    url = "redis://127.0.0.1:1/0?retry_for=3"  # port 1: nothing listens
    started = time.monotonic()
    proc = subprocess.Popen(
        [ROTA, "--url", url, "status"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert proc.stderr is not None
        first = proc.stderr.readline()  # blocks until the first line: bounded by the wait below
        seen = time.monotonic() - started
        _, rest = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    assert first.startswith("warning: cannot reach Redis at redis://127.0.0.1:1/0: ")
    assert first.rstrip().endswith("Connection refused; retrying for up to 3 s")
    assert seen < 2.5  # long before the 3 s budget runs out
    assert proc.returncode == 1
    assert "is unreachable" in rest
