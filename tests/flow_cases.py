"""Golden cases of the flow-control rules, run against rota.flow (the Python
rules) and against every store (the Redis store's Lua and the SQLite store's
limit book), so that the implementations cannot drift apart.

Times are relative to the store's clock: ``open_in`` is ``open_until - now``
(None: closed), never 0 so that a case holds for a store whose clock moves
while it runs.
"""

from __future__ import annotations

from typing import NamedTuple


class BreakerCase(NamedTuple):
    """A breaker's state and how many jobs with its key a claim may start."""

    name: str
    threshold: int
    failures: int
    open_in: float | None
    inflight: int
    probe_running: bool
    room: int


BREAKER_CASES: tuple[BreakerCase, ...] = (
    BreakerCase("closed, nothing on record", 3, 0, None, 0, False, 3),
    BreakerCase("closed, one failure", 3, 1, None, 0, False, 2),
    BreakerCase("closed, two failures", 3, 2, None, 0, False, 1),
    BreakerCase("closed, jobs in flight", 3, 0, None, 2, False, 1),
    BreakerCase("closed, failures and jobs in flight", 3, 1, None, 1, False, 1),
    BreakerCase("closed, its room in flight", 3, 2, None, 1, False, 0),
    BreakerCase("closed, more in flight than its threshold", 3, 0, None, 5, False, 0),
    BreakerCase("closed, failures past a lower threshold", 2, 4, None, 0, False, 0),
    BreakerCase("closed, threshold of one", 1, 0, None, 0, False, 1),
    BreakerCase("closed, a large threshold", 50, 10, None, 4, False, 36),
    BreakerCase("open, cooling down", 3, 3, 60.0, 0, False, 0),
    BreakerCase("open, cooling down, a straggler in flight", 3, 3, 60.0, 1, False, 0),
    BreakerCase("half-open", 3, 3, -1.0, 0, False, 1),
    BreakerCase("half-open, a straggler in flight", 3, 4, -1.0, 1, False, 1),
    BreakerCase("half-open, its probe running", 3, 3, -1.0, 1, True, 0),
)
