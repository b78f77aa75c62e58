"""How many jobs a worker holds beyond its slots, waiting for one.

A held job's next slot is at hand when a running job ends, and a claim then
brings a batch where it would bring one job: fewer claims, less CPU per job.
But a held job is not available to other workers. So by default a worker
holds one job per slot only while its jobs are short, when a held job waits
a few milliseconds at most; while they are long it holds none, and a job
waits in the queue for whichever worker frees a slot first. ``--prefetch N``
fixes the number instead.
"""

from __future__ import annotations

#: Jobs that stay in a worker (claim to done) under this long on average are short.
SHORT_JOB = 0.01
#: The weight of the latest job in that average.
WEIGHT = 0.2


class ClaimAhead:
    """A worker's claim-ahead: ``fixed`` jobs when given, else one per slot
    while the moving average of its jobs' stay (claim to done) is under
    :data:`SHORT_JOB`; none before any job has ended."""

    def __init__(self, slots: int, fixed: int | None = None) -> None:
        self.slots = slots
        self.fixed = fixed
        self.stay: float | None = None  # the moving average, seconds

    def done(self, seconds: float) -> None:
        """A job left the worker ``seconds`` after it was claimed."""
        last = seconds if self.stay is None else self.stay
        self.stay = last + (seconds - last) * WEIGHT

    def short(self) -> bool:
        """Whether the worker's jobs are short now (none has ended: not)."""
        return self.stay is not None and self.stay < SHORT_JOB

    def jobs(self) -> int:
        """Jobs the worker may hold beyond its slots now."""
        if self.fixed is not None:
            return self.fixed
        return self.slots if self.short() else 0
