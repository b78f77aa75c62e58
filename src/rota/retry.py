"""Backoff between attempts: exponential, capped, with jitter."""

from __future__ import annotations


def backoff_delay(failures: int, base: float, cap: float, rand: float) -> float:
    """Seconds to wait before the attempt after ``failures`` failed ones.

    The delay doubles with each failure from ``base`` up to ``cap``; ``rand`` in
    [0, 1) spreads it over the upper half of that ("equal jitter"), so retries
    of many jobs that failed together do not arrive together.
    """
    if failures < 1:
        return 0.0
    ceiling = min(cap, base * 2.0 ** min(failures - 1, 64))
    return ceiling / 2.0 + ceiling / 2.0 * rand
