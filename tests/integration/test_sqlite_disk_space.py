"""A real worker's retention pass gives the space of the jobs it purges back
to the file system on SQLite (docs/sqlite.md, "Disk space")."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

from conformance.support import new_job, succeed_all
from helpers import wait_for
from procs import Processes
from rota.stores import open_store


def page_count(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        return int(conn.execute("PRAGMA page_count").fetchone()[0])


def test_a_workers_retention_pass_shrinks_the_database(
    processes: Processes, app_path: Callable[[str], str], tmp_path: Path
) -> None:
    path = tmp_path / "jobs.db"
    url = f"sqlite:///{path}"
    store = open_store(url)
    try:  # 3,000 jobs of 8 KB, finished before the worker starts
        store.enqueue([new_job("x" * 8000, task="carry") for _ in range(3000)])
        assert succeed_all(store) == 3000
    finally:
        store.close()
    full = page_count(path)
    assert full > 6000
    processes.rota("worker", app_path("retaining"), "--url", url)
    wait_for(
        lambda: page_count(path) < full / 4,
        timeout=60,
        interval=0.2,
        what="the worker's retention pass to give the purged jobs' pages back",
    )
