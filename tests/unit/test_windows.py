"""A trailing window's counts from per-minute rows: the minute the window
starts in counts for its part inside the window."""

from __future__ import annotations

import math

from rota.models import MinuteStats
from rota.windows import WindowTotals, window_totals


def row(minute: int, succeeded: int, failed: int = 0, retried: int = 0) -> MinuteStats:
    return MinuteStats(minute, "q", "t", succeeded, failed, retried)


def test_whole_minutes_inside_the_window_count_whole() -> None:
    rows = [row(10, 60, 6, 3), row(11, 30)]
    assert window_totals(rows, 10 * 60) == WindowTotals(90, 6, 3)


def test_minutes_before_the_window_do_not_count() -> None:
    assert window_totals([row(9, 60), row(10, 5)], 10 * 60) == WindowTotals(5, 0, 0)


def test_the_minute_the_window_starts_in_counts_for_its_part_inside() -> None:
    # a window starting 20 s into minute 10 takes two thirds of it
    assert window_totals([row(10, 60, 30, 30), row(11, 7)], 10 * 60 + 20) == WindowTotals(
        47, 20, 20
    )


def test_five_minutes_of_a_steady_rate_count_five_minutes_wherever_the_window_starts() -> None:
    for now in (6000, 6001, 6015, 6030, 6059):  # 6000 s: the start of minute 100
        # one attempt a second, up to now: the current minute holds those so far
        rows = [row(m, min(60, now - m * 60)) for m in range(90, now // 60 + 1)]
        assert window_totals(rows, now - 300).succeeded == 300, now


def test_all_time_counts_every_row() -> None:
    assert window_totals([row(0, 4), row(5, 6)], -math.inf) == WindowTotals(10, 0, 0)
