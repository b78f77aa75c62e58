"""Real ``rota worker`` processes and a scheduler on a private MariaDB
server that is killed with SIGKILL mid-run and started again on the same
data: every job ends succeeded with its own result and runs once, nothing
acknowledged before the crash is lost, the scheduler fires again, and the
workers reconnect by themselves (``crash_runs.ride_out_a_crash``)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from integration.crash_runs import ride_out_a_crash
from mariadb_server import MariaDB, mariadb_server
from procs import Processes

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

    def crash() -> None:
        mariadb_server.crash()
        mariadb_server.start()

    ride_out_a_crash(
        mariadb_server.url("faults"), crash, processes, app_path, tmp_path, n=2_000, before=300
    )
    assert time.monotonic() - started < 150
