"""Finished attempts over a trailing window (the last 5 minutes, hour, day),
from the store's per-minute counts (:meth:`~rota.stores.roles.InspectionStore.throughput`).

The minute a window starts in lies partly outside it: it counts for the
part inside (a window that starts 20 s into a minute takes two thirds of
that minute's counts), as if its attempts were spread evenly over the
minute. So "the last 5 minutes" covers five minutes, not four to six.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from rota.models import MinuteStats

__all__ = ["WindowTotals", "window_totals"]


@dataclass(frozen=True, slots=True)
class WindowTotals:
    """Attempts that ended within a window: ``failed`` counts every failed
    attempt, ``retried`` those of them after which the job ran again."""

    succeeded: int = 0
    failed: int = 0
    retried: int = 0


def window_totals(rows: Iterable[MinuteStats], since: float) -> WindowTotals:
    """The counts of ``rows`` from ``since`` (store clock, seconds) on; the
    minute ``since`` falls in counts for its part after ``since``."""
    succeeded = failed = retried = 0.0
    for row in rows:
        share = min(1.0, (row.minute * 60 + 60 - since) / 60)
        if share > 0:
            succeeded += row.succeeded * share
            failed += row.failed * share
            retried += row.retried * share
    return WindowTotals(round(succeeded), round(failed), round(retried))
