"""``rota status``: queues, workers and throughput at a glance."""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

import click
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from rota._time import format_duration
from rota._wording import lag_text
from rota.cli._support import (
    CliState,
    console,
    fmt_when,
    pass_state,
    positive_duration_callback,
    read_url_option,
    url_option,
)
from rota.cli.queues import queues_table
from rota.diagnose import LOST_AFTER, diagnose, is_overdue
from rota.errors import StoreUnavailable
from rota.models import Schedule, WorkerInfo
from rota.stores import Store, redact_url
from rota.windows import window_totals

if TYPE_CHECKING:
    from rich.console import Console

    from rota.app import App

__all__ = [
    "LOST_AFTER",
    "WINDOWS",
    "status",
    "status_view",
    "store_line",
    "throughput_rows",
    "worker_state",
]

#: Schedules ``rota status`` lists as the next to fire.
NEXT_SCHEDULES = 3

#: ``--watch``: seconds between views when none are given, and the bounds.
DEFAULT_WATCH = 2.0
MIN_WATCH = 0.1
MAX_WATCH = 3600.0

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
    for column in ("stuck", "host cpu", "host mem", "load", "errors", "heartbeat", "state"):
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
            _percent(None if lost else info.cpu_percent),
            _percent(None if lost else info.mem_percent),
            _percent(None if lost or info.load is None else info.load * 100),
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


def store_line(app: App) -> Text:
    """Which store ``rota status`` shows (its password hidden)."""
    return Text(f"store: {redact_url(app.url)}")


def status_view(app: App) -> Group:
    """What ``rota status`` shows below :func:`store_line`, read now from
    ``app``'s reader."""
    store = app.reader
    parts: list[RenderableType] = []
    if app.read_url is not None:
        parts.append(Text(f"read from replica: {redact_url(app.read_url)}{lag_text(store)}"))
    now = store.now()
    infos, workers, found = store.queues(), store.workers(), store.schedules()
    problems = diagnose(store, infos, workers, found, now)  # (from what was just read)
    parts += [Text(f"warning: {p.message}", style="bold yellow") for p in problems]
    parts += [
        Text(),
        _heading("queues"),
        queues_table(infos) if infos else Text("no queues yet"),
        Text(),
        _heading("workers"),
        workers_table(workers, now) if workers else Text("no workers"),
        Text(),
        _heading("throughput (finished attempts)"),
        throughput_table(throughput_rows(store, now)),
    ]
    if found:
        parts += [Text(), _heading("schedules"), *schedules_summary(found, now)]
    return Group(*parts)


def schedules_summary(found: Sequence[Schedule], now: float) -> list[RenderableType]:
    """How many schedules are active, paused and overdue, and the next ones
    to fire (:data:`NEXT_SCHEDULES` at most)."""
    active = [s for s in found if s.enabled]
    overdue = sum(1 for s in active if is_overdue(s, now))
    counts = f"{len(active)} active, {len(found) - len(active)} paused"
    parts: list[RenderableType] = [Text(counts + (f", {overdue} overdue" if overdue else ""))]
    coming = sorted(
        (s for s in active if s.next_fire is not None and not is_overdue(s, now)),
        key=lambda s: (s.next_fire, s.name),
    )[:NEXT_SCHEDULES]
    if coming:
        table = Table(box=None, pad_edge=False, header_style="bold")
        table.add_column("next to fire")
        table.add_column("when")
        for s in coming:
            table.add_row(s.name, fmt_when(s.next_fire, now))
        parts.append(table)
    return parts


def _watch_interval(ctx: click.Context, param: click.Parameter, value: str | None) -> float | None:
    """``--watch``: seconds (or ``5s``, ``1m``) from :data:`MIN_WATCH` to :data:`MAX_WATCH`."""
    seconds = positive_duration_callback(ctx, param, value)
    if seconds is not None and not MIN_WATCH <= seconds <= MAX_WATCH:
        raise click.BadParameter(
            f"{value} is out of range: from {MIN_WATCH:g} s to {MAX_WATCH:g} s", ctx, param
        )
    return seconds


@click.command()
@click.option(
    "--watch",
    "-w",
    "interval",
    is_flag=False,
    flag_value=f"{DEFAULT_WATCH:g}",
    default=None,
    callback=_watch_interval,
    metavar="[SECONDS]",
    help=f"Show it again every SECONDS ({DEFAULT_WATCH:g} when not given) until Ctrl-C.",
)
@url_option
@read_url_option
@pass_state
def status(cli: CliState, interval: float | None) -> None:
    """Queues, workers online and throughput."""
    app = cli.store_app()
    out = console()
    if interval is None:
        out.print(store_line(app), soft_wrap=True)  # first: the store may fail to answer
        out.print(status_view(app), soft_wrap=True)
        return
    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C is how a watch ends
        _watch(app, out, interval)


def _watch(app: App, out: Console, every: float) -> None:
    """Show :func:`status_view` every ``every`` seconds: in place on a
    terminal, one view after another otherwise. A store that stops
    answering is said in the view, and the watch goes on."""
    from rich.live import Live

    def frame() -> Group:
        stamp = time.strftime("%H:%M:%S")
        footer = Text(f"\n{stamp} · every {every:g} s · Ctrl-C to stop", style="dim")
        try:
            return Group(store_line(app), status_view(app), footer)
        except StoreUnavailable as exc:
            failed = Text(f"the store does not answer: {exc}", style="bold red")
            return Group(store_line(app), failed, footer)

    if not out.is_terminal:
        while True:
            out.print(frame(), soft_wrap=True)
            out.print()
            time.sleep(every)
    with Live(frame(), console=out, auto_refresh=False) as live:
        while True:
            time.sleep(every)
            live.update(frame(), refresh=True)
