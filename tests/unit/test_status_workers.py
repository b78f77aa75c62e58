"""``rota status``'s workers table shows the errors each worker survived."""

from __future__ import annotations

from rich.console import Console

from rota.cli.status import workers_table
from rota.models import WorkerInfo


def test_the_workers_table_has_an_errors_column() -> None:
    info = WorkerInfo(
        id="w1", host="node-1", pid=7, queues=("default",), concurrency=2, mode="threads",
        running=0, started_at=100.0, heartbeat_at=100.0, errors=12,
    )  # fmt: skip
    console = Console(width=200, record=True)
    console.print(workers_table([info], now=101.0))
    header, row = console.export_text().splitlines()[:2]
    columns = header.split()
    assert "errors" in columns
    assert row.split()[columns.index("errors")] == "12"


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
        )
        for n, beat in ((1, 1000.0), (2, 100.0))
    ]
    console = Console(width=200, record=True)
    console.print(workers_table(infos, now=1001.0))
    header, online, lost = console.export_text().splitlines()[:3]
    at = header.split().index("running")
    assert online.split()[at] == "4"
    assert lost.split()[at] == "-" and lost.split()[-1] == "lost"
