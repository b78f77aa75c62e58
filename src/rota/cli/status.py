"""``rota status``: queues, workers and throughput at a glance."""

from __future__ import annotations

import math
from collections.abc import Sequence

import click
from rich.table import Table
from rich.text import Text

from rota._time import format_duration
from rota._wording import lag_text
from rota.cli._support import (
    CliState,
    console,
    pass_state,
    read_url_option,
    url_option,
)
from rota.cli.queues import queues_table
from rota.diagnose import LOST_AFTER, diagnose
from rota.models import WorkerInfo
from rota.stores import Store, redact_url
from rota.windows import window_totals

__all__ = ["LOST_AFTER", "WINDOWS", "status", "throughput_rows", "worker_state"]

#: Throughput windows: label and length in seconds (None: all time).
WINDOWS: tuple[tuple[str, float | None], ...] = (
    ("last 5 min", 300.0),
    ("last hour", 3600.0),
    ("last day", 86400.0),
    ("all time", None),
)


def worker_state(info: WorkerInfo, now: float) -> Text:
    """online, holding back (host over its load limits), stopping, or lost."""
    if now - info.heartbeat_at > LOST_AFTER:
        return Text("lost", style="bold red")
    if info.stopping:
        return Text("stopping", style="yellow")
    if info.holding_back:
        return Text("holding back", style="yellow")
    return Text("online", style="green")


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}%"


def workers_table(infos: Sequence[WorkerInfo], now: float) -> Table:
    """One row per worker that sent a heartbeat."""
    table = Table(box=None, pad_edge=False, header_style="bold")
    for column in ("host", "pid", "queues", "mode", "concurrency", "running"):
        table.add_column(column, justify="right" if column in ("pid", "running") else "left")
    for column in ("stuck", "cpu", "mem", "load", "errors", "heartbeat", "state"):
        table.add_column(column, justify="right" if column != "state" else "left")
    for info in infos:
        lost = now - info.heartbeat_at > LOST_AFTER  # its last counts are stale: its jobs moved on
        table.add_row(
            info.host,
            str(info.pid),
            ",".join(info.queues),
            info.mode,
            str(info.concurrency),
            "-" if lost else str(info.running),
            str(info.stuck),
            _percent(info.cpu_percent),
            _percent(info.mem_percent),
            _percent(None if info.load is None else info.load * 100),
            str(info.errors),
            f"{format_duration(now - info.heartbeat_at)} ago",
            worker_state(info, now),
        )
    return table


def throughput_rows(store: Store, now: float) -> list[tuple[str, int, int]]:
    """(window, succeeded, failed) for each of :data:`WINDOWS`."""
    rows = []
    for label, seconds in WINDOWS:
        if seconds is None:
            counts = window_totals(store.totals(), -math.inf)
        else:
            counts = window_totals(store.throughput(now - seconds), now - seconds)
        rows.append((label, counts.succeeded, counts.failed))
    return rows


def throughput_table(rows: Sequence[tuple[str, int, int]]) -> Table:
    """Finished attempts per window."""
    table = Table(box=None, pad_edge=False, header_style="bold")
    table.add_column("window")
    table.add_column("succeeded", justify="right")
    table.add_column("failed", justify="right")
    for label, succeeded, failed in rows:
        table.add_row(label, str(succeeded), str(failed))
    return table


def _heading(title: str) -> Text:
    return Text(title, style="bold underline")


@click.command()
@url_option
@read_url_option
@pass_state
def status(cli: CliState) -> None:
    """Queues, workers online and throughput."""
    app = cli.store_app()
    out = console()
    out.print(f"store: {redact_url(app.url)}", soft_wrap=True)
    store = app.reader
    if app.read_url is not None:
        out.print(f"read from replica: {redact_url(app.read_url)}{lag_text(store)}", soft_wrap=True)
    now = store.now()
    for problem in diagnose(store):
        out.print(Text(f"warning: {problem.message}", style="bold yellow"), soft_wrap=True)
    out.print()
    out.print(_heading("queues"))
    infos = store.queues()
    out.print(queues_table(infos) if infos else "no queues yet")
    out.print()
    out.print(_heading("workers"))
    workers = store.workers()
    out.print(workers_table(workers, now) if workers else "no workers")
    out.print()
    out.print(_heading("throughput (finished attempts)"))
    out.print(throughput_table(throughput_rows(store, now)))
