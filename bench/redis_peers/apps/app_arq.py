"""arq: the benchmark's functions, the worker settings, and how the benchmark
sends jobs. ``BENCH_CONCURRENCY`` sets ``max_jobs``, ``BENCH_POLL`` the poll
delay in seconds. Run as a script, it starts a worker with ``run_worker`` (the
``arq`` command would also log every job at INFO)."""

from __future__ import annotations

import asyncio
import os
from typing import Any

import _common
from arq import create_pool
from arq.connections import ArqRedis, RedisSettings
from arq.worker import run_worker


async def noop(ctx: dict[str, Any]) -> None:
    """The no-op job."""
    await _common.anoop()


async def stamp(ctx: dict[str, Any]) -> None:
    """The latency job."""
    await _common.astamp()


async def sleepy(ctx: dict[str, Any], seconds: float) -> None:
    """The I/O-bound job."""
    await _common.asleepy(seconds)


class WorkerSettings:
    """The worker: every function, results kept (arq's default)."""

    functions = [noop, stamp, sleepy]
    redis_settings = RedisSettings.from_dsn(_common.queue_url())
    max_jobs = int(os.environ.get("BENCH_CONCURRENCY", "10"))
    poll_delay = float(os.environ.get("BENCH_POLL", "0.5"))


CHUNK = 500
_pool: ArqRedis | None = None


async def setup() -> None:
    global _pool
    _pool = await create_pool(WorkerSettings.redis_settings)


async def teardown() -> None:
    if _pool is not None:
        await _pool.aclose()


def _enqueuer() -> ArqRedis:
    assert _pool is not None, "setup() first"
    return _pool


async def send_noop(n: int) -> None:
    """No bulk send: ``enqueue_job`` calls, a chunk of them at a time."""
    pool = _enqueuer()
    for first in range(0, n, CHUNK):
        await asyncio.gather(*(pool.enqueue_job("noop") for _ in range(min(CHUNK, n - first))))


async def send_sleep(n: int, seconds: float) -> None:
    pool = _enqueuer()
    for first in range(0, n, CHUNK):
        await asyncio.gather(
            *(pool.enqueue_job("sleepy", seconds) for _ in range(min(CHUNK, n - first)))
        )


async def send_stamp() -> None:
    await _enqueuer().enqueue_job("stamp")


if __name__ == "__main__":
    run_worker(WorkerSettings)  # type: ignore[arg-type]
