"""Geometry of the dashboard's charts, drawn as inline SVG.

The per-minute chart (:func:`chart`): the page renders the first frame on
the server with these numbers; the dashboard's script (``static/rota.js``,
function ``drawChart``) redraws it with the same arithmetic every time it
polls ``/api/stats/live``.

The plot spans x from :data:`LEFT` to ``LEFT + WIDTH`` and y from
:data:`TOP` down to :data:`HEIGHT`; the count axis and its ticks sit left of
it, the time axis and its labels below it. A schedule's runs
(:func:`runs_chart`) share that frame, one bar per run.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from rota._time import shown_utc
from rota.models import Job, JobState
from rota.scheduling.history import run_time
from rota.web._ops import DAY_BAR_MINUTES, ChartPoint

__all__ = [
    "HEIGHT",
    "LEFT",
    "RIGHT",
    "TOP",
    "WIDTH",
    "Bar",
    "Chart",
    "Frame",
    "RunBar",
    "RunsChart",
    "Tick",
    "chart",
    "count_ticks",
    "day_chart",
    "nice_max",
    "nice_seconds",
    "runs_chart",
]

WIDTH = 600
HEIGHT = 160  # the plot's bottom edge (count 0)
TOP = 12  # the plot's top edge (the top of the scale)
LEFT = 40  # room for the count labels
BOTTOM = 22  # room for the time labels
RIGHT = 18  # room for half a time label at the plot's right edge
_LABEL_EVERY = 10  # minutes between time labels
_DAY_LABEL_EVERY = 240


@dataclass(frozen=True, slots=True)
class Bar:
    """One minute: succeeded at the bottom, failed attempts stacked on top."""

    x: float
    ok_y: float
    ok_h: float
    fail_y: float
    fail_h: float
    title: str


@dataclass(frozen=True, slots=True)
class Tick:
    """A labelled mark on an axis: at ``y`` on the count axis, at ``x`` on the time axis."""

    at: float
    label: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Frame:
    """Where a chart draws: its size, and the edges of its plot."""

    width: int = LEFT + WIDTH + RIGHT
    height: int = HEIGHT + BOTTOM
    left: int = LEFT
    right: int = LEFT + WIDTH
    top: int = TOP
    bottom: int = HEIGHT


@dataclass(frozen=True, slots=True, kw_only=True)
class Chart(Frame):
    """Bars, both axes' ticks, and the totals the legend shows."""

    bars: list[Bar]
    scale: int
    count_ticks: list[Tick]
    time_ticks: list[Tick]
    succeeded: int
    failed_attempts: int
    bar_width: int
    #: Minutes a bar counts, and between two labels of the time axis.
    minutes: int = 1
    label_every: int = _LABEL_EVERY


def nice_max(value: int) -> int:
    """The smallest of 1, 2, 5 x 10^k that is at least ``value`` (and at least 1)."""
    step = 1
    while True:
        for m in (1, 2, 5):
            if m * step >= value:
                return m * step
        step *= 10


def count_ticks(scale: int) -> list[int]:
    """Whole counts to mark from 0 to ``scale``: fifths when they are whole,
    else halves, else just the ends."""
    for parts in (5, 2, 1):
        if scale % parts == 0:
            return [scale * i // parts for i in range(parts + 1)]
    raise AssertionError("unreachable: every scale divides by 1")


def _hhmm(minute: int) -> str:
    return datetime.fromtimestamp(minute * 60, tz=UTC).strftime("%H:%M")


def chart(points: list[ChartPoint], minutes: int = 1, label_every: int = _LABEL_EVERY) -> Chart:
    """Bars of ``minutes`` each (up to 60 of a minute, or the day chart's),
    oldest on the left, with axes and totals; a time label every
    ``label_every`` minutes."""
    scale = nice_max(max((p.succeeded + p.failed_attempts for p in points), default=0))
    plot = HEIGHT - TOP
    slot = WIDTH / max(len(points), 1)  # 10 for the hour's 60 bars
    bar = round(slot * 0.8)
    bars = []
    times = []
    for i, p in enumerate(points):
        ok_h = plot * p.succeeded / scale
        fail_h = plot * p.failed_attempts / scale
        ok_y = HEIGHT - ok_h
        x = round(LEFT + i * slot + (slot - bar) / 2, 2)
        span = _hhmm(p.minute) if minutes == 1 else f"{_hhmm(p.minute)}-{_hhmm(p.minute + minutes)}"
        bars.append(
            Bar(
                x=x,
                ok_y=round(ok_y, 2),
                ok_h=round(ok_h, 2),
                fail_y=round(ok_y - fail_h, 2),
                fail_h=round(fail_h, 2),
                title=f"{span} UTC: {p.succeeded} succeeded, {p.failed_attempts} failed "
                + ("attempt" if p.failed_attempts == 1 else "attempts"),
            )
        )
        if p.minute % label_every == 0:
            times.append(Tick(x + bar / 2, _hhmm(p.minute)))
    counts = [Tick(round(HEIGHT - plot * n / scale, 2), str(n)) for n in count_ticks(scale)]
    return Chart(
        bars=bars,
        scale=scale,
        count_ticks=counts,
        time_ticks=times,
        succeeded=sum(p.succeeded for p in points),
        failed_attempts=sum(p.failed_attempts for p in points),
        bar_width=bar,
        minutes=minutes,
        label_every=label_every,
    )


def day_chart(points: list[ChartPoint]) -> Chart:
    """:func:`chart` of the day: a bar per :data:`~rota.web._ops.DAY_BAR_MINUTES`,
    a time label every four hours."""
    return chart(points, DAY_BAR_MINUTES, _DAY_LABEL_EVERY)


# -- a schedule's runs --------------------------------------------------------

_RUN_SLOT = 20  # width per run: a bar and a gap (30 runs fill the plot)
_RUN_BAR = 16


@dataclass(frozen=True, slots=True)
class RunBar:
    """One run: as tall as it ran (a running job: so far), coloured by its state."""

    x: float
    y: float
    h: float
    state: str
    job_id: str
    title: str


@dataclass(frozen=True, slots=True, kw_only=True)
class RunsChart(Frame):
    """Bars of a schedule's runs, oldest on the left, and the marks of the
    axis of how long they ran.

    ``ticks`` are ``(y, seconds)`` pairs, labelled by the page with its own
    duration wording.
    """

    bars: list[RunBar]
    scale: float
    ticks: list[tuple[float, float]]
    bar_width: int = _RUN_BAR


def nice_seconds(value: float) -> float:
    """The smallest of 1, 2, 5 x 10^k seconds (k any integer) at least ``value``;
    1 s when there is nothing to show."""
    if not value > 0:
        return 1.0
    power = 10.0 ** math.floor(math.log10(value))
    for m in (1, 2, 5, 10):
        if m * power >= value * (1 - 1e-9):  # 0.3 / 0.1 is 2.9999999999999996
            return float(f"{m * power:.12g}")
    raise AssertionError("unreachable: 10 x 10^floor(log10 v) exceeds v")


def runs_chart(jobs: Sequence[Job], now: float) -> RunsChart:
    """A bar per job of ``jobs`` (newest first, as listed), drawn oldest on
    the left, as tall as its :func:`~rota.scheduling.history.run_time` (none
    for a job that has not run or waits to run again)."""
    ordered = list(reversed(jobs))
    lengths = [run_time(j, now) or 0.0 for j in ordered]
    scale = nice_seconds(max(lengths, default=0.0))
    plot = HEIGHT - TOP
    bars = []
    for i, (job, ran) in enumerate(zip(ordered, lengths, strict=True)):
        h = round(plot * ran / scale, 2)
        if job.state is JobState.RUNNING:
            started = f"running for {ran:.3g} s"
        elif run_time(job, now) is None:
            started = "not run" if job.started_at is None else "to run again"
        else:
            started = f"ran {ran:.3g} s"
        bars.append(
            RunBar(
                x=LEFT + i * _RUN_SLOT + 2,
                y=round(HEIGHT - h, 2),
                h=h,
                state=job.state.value,
                job_id=job.id,
                title=f"sent {_sent(job.enqueued_at)}: {job.state.value}, {started}",
            )
        )
    ticks = [(round(HEIGHT - plot * part, 2), scale * part) for part in (0.0, 0.5, 1.0)]
    return RunsChart(bars=bars, scale=scale, ticks=ticks)


def _sent(t: float) -> str:
    moment = shown_utc(t)
    return f"epoch {t!r}" if moment is None else moment.strftime("%Y-%m-%d %H:%M:%S UTC")
