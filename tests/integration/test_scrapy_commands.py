"""Scrapy spiders as rota command jobs, capped at two running at once
across the cluster: two real ``rota worker --commands`` processes run real
``scrapy runspider`` processes (tests/integration/apps/scrapy_commands.py)
against the local test site.

The cap is checked from what the spiders record (a counter each one
raises when it starts and lowers when it closes, under a file lock), not
from timing: it reaches two and never goes past it. Every spider job
succeeds and every page of every host is fetched. A spider past its
timeout gets SIGTERM, closes as Scrapy does on it (its ``closed()`` runs,
once its request in flight times out) before the grace is over, and its
job fails naming the timeout.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from crawl_site import HostSpec, serving
from helpers import APPS, wait_for
from procs import Processes
from rota import App
from rota.models import JobState

CAP = 2  # the apps' Limit("spiders", 2)
SPIDERS = 5


def tree(label: str, n: int) -> dict[str, list[tuple[str, str]]]:
    """``/`` links to /p0../p2; /pi links to /p(2i+3), /p(2i+4) and back to /."""
    pages: dict[str, list[tuple[str, str]]] = {"/": [(label, f"/p{i}") for i in range(3)]}
    for i in range(n):
        kids = [(label, f"/p{j}") for j in (2 * i + 3, 2 * i + 4) if j < n]
        pages[f"/p{i}"] = [*kids, (label, "/")]
    return pages


@pytest.fixture
def sender(sender_of: Callable[[str, str], App], tmp_path: Path) -> App:
    """The spiders app, sending to a fresh SQLite store."""
    return sender_of("scrapy_commands", f"sqlite:///{tmp_path / 'rota.db'}")


def worker(processes: Processes, app: App, counted: Path) -> subprocess.Popen[bytes]:
    return processes.rota(
        "worker",
        f"{APPS / 'scrapy_commands.py'}:app",
        "--url",
        app.url,
        "--commands",
        "--queues",
        "spiders",
        "--concurrency",
        "4",
        env={"COUNTED": str(counted)},
    )


def test_spider_commands_never_run_more_than_the_cap(
    sender: App, processes: Processes, tmp_path: Path
) -> None:
    counted = tmp_path / "running"
    # pages slow enough (a crawl of about two seconds) that two spiders run
    # at once however far apart a loaded machine starts their processes
    hosts = {f"h{i}": HostSpec(tree(f"h{i}", 12), delay=0.5) for i in range(SPIDERS)}
    with serving(hosts) as site:
        spider = sender.get_task("spider")
        handles = [spider.send(extra_args=["-a", f"start={site.url(label)}"]) for label in hosts]
        for _ in range(2):
            worker(processes, sender, counted)
        states = lambda: [h.status() for h in handles]  # noqa: E731
        wait_for(
            lambda: all(s in ("succeeded", "failed") for s in states()), 90, what="the spiders"
        )
        assert [h.job().state for h in handles] == [JobState.SUCCEEDED] * SPIDERS
        fetched = {(r.host, r.path) for r in site.requests()}
        assert fetched == {(label, path) for label in hosts for path in hosts[label].pages}
    changes = [line.split() for line in (tmp_path / "running.log").read_text().splitlines()]
    assert sorted(step for _, step, _ in changes) == ["+1"] * SPIDERS + ["-1"] * SPIDERS
    peak = max(int(running) for _, _, running in changes)
    assert peak == CAP, changes  # reached, never passed, with 8 slots in the two workers


def test_a_spider_past_its_timeout_is_closed_by_scrapy_and_fails(
    sender: App, processes: Processes, tmp_path: Path
) -> None:
    counted = tmp_path / "running"
    with serving({"slow": HostSpec({"/": []}, delay=30)}) as site:
        task = sender.get_task("stopped_spider")
        # Scrapy's graceful close waits for the requests in flight, each up
        # to its DOWNLOAD_TIMEOUT: below the command's grace, no SIGKILL
        start, download_timeout = f"start={site.url('slow')}", "DOWNLOAD_TIMEOUT=3"
        handle = task.send(extra_args=["-a", start, "-s", download_timeout])
        worker(processes, sender, counted)
        wait_for(lambda: handle.status() == "failed", 30, what="the timeout")
    error = handle.job().error or ""
    assert "after timeout 5 s" in error, error
    assert "still running" not in error, error  # SIGTERM was enough: no SIGKILL
    changes = [line.split() for line in (tmp_path / "running.log").read_text().splitlines()]
    assert [step for _, step, _ in changes] == ["+1", "-1"]  # the spider's closed() ran
    assert "Spider closed (shutdown)" in error  # the last line of its stderr
