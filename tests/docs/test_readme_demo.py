"""The README's first command: ``rota run examples/demo.py:app`` crawls and serves.

The README's block also creates a virtualenv and installs the package, which
CI's own setup does; this runs the command it ends with, on a fresh store.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from doc_blocks import ROOT

from helpers import wait_for
from web.support import free_port

ROTA = Path(sys.executable).with_name("rota")


@pytest.fixture
def demo(tmp_path: Path) -> Iterator[str]:
    port = free_port()
    env = os.environ | {"ROTA_URL": f"sqlite:///{tmp_path / 'rota.db'}"}
    log = (tmp_path / "demo.log").open("wb")
    proc = subprocess.Popen(
        [str(ROTA), "run", "examples/demo.py:app", "--port", str(port)],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    log.close()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)


def test_demo_crawls_and_the_dashboard_shows_it(demo: str) -> None:
    def crawled() -> int:
        try:
            queues = httpx.get(f"{demo}/api/queues", timeout=2).json()
        except httpx.HTTPError:
            return 0
        return sum(queue["counts"].get("succeeded", 0) for queue in queues)

    wait_for(crawled, timeout=60, interval=0.2, what="the demo to finish a job")
    page = httpx.get(f"{demo}/", timeout=5)
    assert page.status_code == 200
    assert "crawl" in page.text
