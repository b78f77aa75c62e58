"""RQ: the benchmark's tasks and how the benchmark sends them."""

from __future__ import annotations

import _common
from redis import Redis
from rq import Queue

CHUNK = 5_000
_queue: Queue | None = None


def noop() -> None:
    """The no-op job."""
    _common.noop()


def stamp() -> None:
    """The latency job."""
    _common.stamp()


def sleepy(seconds: float) -> None:
    """The I/O-bound job."""
    _common.sleepy(seconds)


def queue() -> Queue:
    global _queue
    if _queue is None:
        _queue = Queue("default", connection=Redis.from_url(_common.queue_url()))
    return _queue


def _send_many(fn: object, args: tuple[object, ...], n: int) -> None:
    """Bulk: ``enqueue_many`` sends a chunk in one pipeline."""
    q = queue()
    for first in range(0, n, CHUNK):
        q.enqueue_many([Queue.prepare_data(fn, args) for _ in range(min(CHUNK, n - first))])


def send_noop(n: int) -> None:
    _send_many(noop, (), n)


def send_sleep(n: int, seconds: float) -> None:
    _send_many(sleepy, (seconds,), n)


def send_stamp() -> None:
    queue().enqueue(stamp)
