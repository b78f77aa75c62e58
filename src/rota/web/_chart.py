"""Geometry of the per-minute chart, drawn as inline SVG.

The page renders the first frame on the server with these numbers; the
dashboard's script (``static/rota.js``, function ``drawChart``) redraws it
with the same arithmetic every time it polls ``/api/stats/live``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from rota.web._ops import ChartPoint

__all__ = ["HEIGHT", "WIDTH", "Bar", "Chart", "chart", "nice_max"]

WIDTH = 600
HEIGHT = 160
_TOP = 12  # room for the scale label
_SLOT = 10  # width per minute: a bar and a gap
_BAR = 8


@dataclass(frozen=True, slots=True)
class Bar:
    """One minute: succeeded at the bottom, failed stacked on top."""

    x: float
    ok_y: float
    ok_h: float
    fail_y: float
    fail_h: float
    title: str


@dataclass(frozen=True, slots=True)
class Chart:
    """Bars plus the value at the top of the scale."""

    bars: list[Bar]
    scale: int
    width: int = WIDTH
    height: int = HEIGHT
    bar_width: int = _BAR


def nice_max(value: int) -> int:
    """The smallest of 1, 2, 5 x 10^k that is at least ``value`` (and at least 1)."""
    step = 1
    while True:
        for m in (1, 2, 5):
            if m * step >= value:
                return m * step
        step *= 10


def chart(points: list[ChartPoint]) -> Chart:
    """Bars for up to 60 minutes, oldest on the left."""
    scale = nice_max(max((p.succeeded + p.failed for p in points), default=0))
    plot = HEIGHT - _TOP
    bars = []
    for i, p in enumerate(points):
        ok_h = plot * p.succeeded / scale
        fail_h = plot * p.failed / scale
        ok_y = HEIGHT - ok_h
        when = datetime.fromtimestamp(p.minute * 60, tz=UTC).strftime("%H:%M UTC")
        bars.append(
            Bar(
                x=i * _SLOT + 1,
                ok_y=round(ok_y, 2),
                ok_h=round(ok_h, 2),
                fail_y=round(ok_y - fail_h, 2),
                fail_h=round(fail_h, 2),
                title=f"{when}: {p.succeeded} succeeded, {p.failed} failed",
            )
        )
    return Chart(bars, scale)
