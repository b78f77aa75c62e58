"""saq: the benchmark's functions, the worker settings, and how the benchmark
sends jobs. ``BENCH_CONCURRENCY`` sets the worker's concurrency."""

from __future__ import annotations

import asyncio
import os
from typing import Any

import _common
from saq import Queue

queue = Queue.from_url(_common.queue_url())


async def noop(ctx: dict[str, Any]) -> None:
    """The no-op job."""
    await _common.anoop()


async def stamp(ctx: dict[str, Any]) -> None:
    """The latency job."""
    await _common.astamp()


async def sleepy(ctx: dict[str, Any], *, seconds: float) -> None:
    """The I/O-bound job."""
    await _common.asleepy(seconds)


settings = {
    "queue": queue,
    "functions": [noop, stamp, sleepy],
    "concurrency": int(os.environ.get("BENCH_CONCURRENCY", "10")),
}

CHUNK = 500


async def setup() -> None:
    await queue.connect()


async def teardown() -> None:
    await queue.disconnect()


async def send_noop(n: int) -> None:
    """No bulk send: ``enqueue`` calls, a chunk of them at a time."""
    for first in range(0, n, CHUNK):
        await asyncio.gather(*(queue.enqueue("noop") for _ in range(min(CHUNK, n - first))))


async def send_sleep(n: int, seconds: float) -> None:
    for first in range(0, n, CHUNK):
        await asyncio.gather(
            *(queue.enqueue("sleepy", seconds=seconds) for _ in range(min(CHUNK, n - first)))
        )


async def send_stamp() -> None:
    await queue.enqueue("stamp")
