"""How a job's attempts read, the same in the dashboard and the CLI."""

from __future__ import annotations

from rota.models import Job

__all__ = ["attempt_text"]


def attempt_text(job: Job) -> str:
    """``2/3`` (attempt 2 of at most 3), or ``2 (1 lost)`` once an attempt was
    lost: lost attempts do not use up ``max_attempts``, so ``2/1`` would mislead."""
    if job.lost:
        return f"{job.attempt} ({job.lost} lost)"
    return f"{job.attempt}/{job.max_attempts}"
