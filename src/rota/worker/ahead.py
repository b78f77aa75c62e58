"""How many jobs a worker holds beyond its slots, waiting for one.

A held job's next slot is at hand when a running job ends, and a claim then
brings a batch where it would bring one job: fewer claims, less CPU per job
(for the worker and for the store: a claim's fixed cost is several times
what one more job in it adds). But a held job is not available to other
workers. So by default a worker holds only as many jobs as its slots free
within :data:`HOLD_FOR` on average (from the moving average of its jobs'
run time), :data:`HOLD_MAX` at most: a held job waits about :data:`HOLD_FOR`.
Jobs of 1 ms on 2 slots get 40 held; 50 ms jobs on 50 slots 20, on the
default 8 slots 3; no-op jobs 128; while jobs are long (a script, a
spider) it holds none, and a job waits in the queue for whichever worker
frees a slot first. ``--prefetch N`` fixes the number instead.
"""

from __future__ import annotations

#: How long a held job may wait for a slot, on average, in seconds. At 10 ms,
#: 50 ms jobs on 8 slots were claimed one at a time; at 20 ms, three at a
#: time, for a fifth less CPU per job, workers and Redis server together
#: (docs/performance.md, "Holding 20 ms of work").
HOLD_FOR = 0.02
#: Jobs whose moving average run time is below this many seconds are short:
#: a slot frees so often that slots wake only as the work needs them
#: (:mod:`rota.worker.turns`).
SHORT_BELOW = 0.01
#: The most jobs held at once (a claim brings at most the free slots and these).
HOLD_MAX = 128
#: The weight of the latest job in the moving average of run times.
WEIGHT = 0.2


class ClaimAhead:
    """A worker's claim-ahead: ``fixed`` jobs when given, else as many as its
    ``slots`` free within :data:`HOLD_FOR` at the moving average of its jobs'
    run time, :data:`HOLD_MAX` at most; none before any job has ended."""

    def __init__(self, slots: int, fixed: int | None = None) -> None:
        self.slots = slots
        self.fixed = fixed
        self.run: float | None = None  # the moving average, seconds

    def done(self, seconds: float) -> None:
        """A job ran for ``seconds`` (from its start in a slot to its end)."""
        last = seconds if self.run is None else self.run
        self.run = last + (seconds - last) * WEIGHT

    def short(self) -> bool:
        """Whether the jobs are short now: they end within :data:`SHORT_BELOW`
        on average (none has ended: not)."""
        return self.run is not None and self.run < SHORT_BELOW

    def jobs(self) -> int:
        """Jobs the worker may hold beyond its slots now."""
        if self.fixed is not None:
            return self.fixed
        if self.run is None:
            return 0
        return min(HOLD_MAX, int(self.slots * HOLD_FOR / max(self.run, 1e-9)))
