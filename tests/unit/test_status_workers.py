"""``rota status``'s workers table: the errors each worker survived, and no
stale figures of a lost worker."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from rota.cli.status import workers_table
from rota.models import WorkerInfo


def test_the_workers_table_has_an_errors_column() -> None:
    info = WorkerInfo(
        id="w1", host="node-1", pid=7, queues=("default",), concurrency=2, mode="threads",
        running=0, started_at=100.0, heartbeat_at=100.0, errors=12,
    )  # fmt: skip
    assert _cells(workers_table([info], now=101.0))["errors"] == ["12"]


def test_a_lost_worker_shows_no_running_count() -> None:
    """A lost worker's last count is stale: its jobs were recovered by others."""
    infos = [
        WorkerInfo(
            id=f"w{n}",
            host=f"node-{n}",
            pid=n,
            queues=("default",),
            concurrency=4,
            mode="threads",
            running=4,
            started_at=100.0,
            heartbeat_at=beat,
            cpu_percent=12.0,
            mem_percent=57.0,
            load=0.31,
        )
        for n, beat in ((1, 1000.0), (2, 100.0))
    ]
    cells = _cells(workers_table(infos, now=1001.0))
    assert [cells[c][0] for c in ("running", "host cpu", "host mem", "load")] == [
        "4",
        "12%",
        "57%",
        "31%",
    ]
    assert [cells[c][1] for c in ("running", "host cpu", "host mem", "load")] == ["-"] * 4
    assert str(cells["state"][1]) == "lost"


def _cells(table: Table) -> dict[str, list[Any]]:
    """Each column's cells, by header."""
    return {str(column.header): list(column.cells) for column in table.columns}
