"""Pure flow-control arithmetic shared by the stores that evaluate it in Python.

Token buckets, circuit breakers and fair virtual time, with the clock passed
in. The Redis store implements the same rules in Lua; one table of golden
cases (tests/flow_cases.py) is run against both.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Bucket:
    """A token bucket's state: ``tokens`` as of ``at``."""

    tokens: float
    at: float


def refill(bucket: Bucket | None, rate: float, burst: int, now: float) -> Bucket:
    """The bucket at ``now``: refilled at ``rate`` tokens/s, capped at ``burst``.
    A bucket never seen before starts full."""
    if bucket is None:
        return Bucket(float(burst), now)
    elapsed = max(0.0, now - bucket.at)  # a clock stepping back credits nothing twice
    return Bucket(min(float(burst), bucket.tokens + elapsed * rate), max(bucket.at, now))


def take(bucket: Bucket) -> Bucket | None:
    """The bucket after taking one token, or None when it has less than one."""
    if bucket.tokens < 1.0:
        return None
    return Bucket(bucket.tokens - 1.0, bucket.at)


def breaker_room(
    failures: int,
    open_until: float | None,
    inflight: int,
    probe_running: bool,
    threshold: int,
    now: float,
) -> int:
    """How many more jobs with a breaker key may start now.

    Closed (``open_until`` None): as many as it has failures left, less the
    jobs already in flight, so that even if every one of them fails no more
    than ``threshold`` consecutive failures happen before it opens. Open and
    cooling down: none. Cooled down (half-open): one probe at a time.
    """
    if open_until is None:
        return max(0, threshold - failures - inflight)
    return 1 if now >= open_until and not probe_running else 0


def breaker_after(
    failures: int, open_until: float | None, ok: bool, threshold: int, cooldown: float, now: float
) -> tuple[int, float | None]:
    """The breaker's ``(failures, open_until)`` after an attempt ended.

    A success closes it. A failure counts; reaching ``threshold`` consecutive
    failures (or failing the half-open probe) opens it for ``cooldown`` s.
    """
    if ok:
        return 0, None
    failures += 1
    if failures >= threshold or open_until is not None:
        return failures, now + cooldown
    return failures, None


def virtual_start(key_last: float, queue_clock: float) -> float:
    """The fair-queuing virtual time of a new job: one round after the later of
    its key's last job and the queue's clock (the last claimed job's time).

    Ordering pending jobs by this value serves keys round-robin: a key with a
    long backlog does not hold up a key that just got its first job.
    """
    return max(key_last, queue_clock) + 1.0
