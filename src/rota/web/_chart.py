"""Geometry of the per-minute chart, drawn as inline SVG.

The page renders the first frame on the server with these numbers; the
dashboard's script (``static/rota.js``, function ``drawChart``) redraws it
with the same arithmetic every time it polls ``/api/stats/live``.

The plot spans x from :data:`LEFT` to ``LEFT + WIDTH`` and y from
:data:`TOP` down to :data:`HEIGHT`; the count axis and its ticks sit left of
it, the time axis and its labels below it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from rota.web._ops import ChartPoint

__all__ = [
    "HEIGHT",
    "LEFT",
    "TOP",
    "WIDTH",
    "Bar",
    "Chart",
    "Tick",
    "chart",
    "count_ticks",
    "nice_max",
]

WIDTH = 600
HEIGHT = 160  # the plot's bottom edge (count 0)
TOP = 12  # the plot's top edge (the top of the scale)
LEFT = 40  # room for the count labels
BOTTOM = 22  # room for the time labels
_SLOT = 10  # width per minute: a bar and a gap
_BAR = 8
_LABEL_EVERY = 10  # minutes between time labels


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


@dataclass(frozen=True, slots=True)
class Chart:
    """Bars, both axes' ticks, and the totals the legend shows."""

    bars: list[Bar]
    scale: int
    count_ticks: list[Tick]
    time_ticks: list[Tick]
    succeeded: int
    failed_attempts: int
    width: int = LEFT + WIDTH
    height: int = HEIGHT + BOTTOM
    bar_width: int = _BAR
    left: int = LEFT
    right: int = LEFT + WIDTH
    top: int = TOP
    bottom: int = HEIGHT


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


def chart(points: list[ChartPoint]) -> Chart:
    """Bars for up to 60 minutes, oldest on the left, with axes and totals."""
    scale = nice_max(max((p.succeeded + p.failed_attempts for p in points), default=0))
    plot = HEIGHT - TOP
    bars = []
    times = []
    for i, p in enumerate(points):
        ok_h = plot * p.succeeded / scale
        fail_h = plot * p.failed_attempts / scale
        ok_y = HEIGHT - ok_h
        x = LEFT + i * _SLOT + 1
        bars.append(
            Bar(
                x=x,
                ok_y=round(ok_y, 2),
                ok_h=round(ok_h, 2),
                fail_y=round(ok_y - fail_h, 2),
                fail_h=round(fail_h, 2),
                title=(
                    f"{_hhmm(p.minute)} UTC: {p.succeeded} succeeded,"
                    f" {p.failed_attempts} failed attempts"
                ),
            )
        )
        if p.minute % _LABEL_EVERY == 0:
            times.append(Tick(x + _BAR / 2, _hhmm(p.minute)))
    counts = [Tick(round(HEIGHT - plot * n / scale, 2), str(n)) for n in count_ticks(scale)]
    return Chart(
        bars=bars,
        scale=scale,
        count_ticks=counts,
        time_ticks=times,
        succeeded=sum(p.succeeded for p in points),
        failed_attempts=sum(p.failed_attempts for p in points),
    )
