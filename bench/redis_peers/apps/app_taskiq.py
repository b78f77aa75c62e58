"""taskiq: the benchmark's tasks and how the benchmark sends them.

``BENCH_TASKIQ_BROKER`` picks the taskiq-redis broker: ``stream``
(``RedisStreamBroker``: consumer group, acknowledged after the task) or
``list`` (``ListQueueBroker``: ``BRPOP``, no acknowledgement, a job popped by
a worker that dies is lost). No result backend: nothing is stored per job.
"""

from __future__ import annotations

import asyncio
import os

import _common
from taskiq_redis import ListQueueBroker, RedisStreamBroker

if os.environ.get("BENCH_TASKIQ_BROKER", "stream") == "list":
    broker = ListQueueBroker(_common.queue_url())
else:
    broker = RedisStreamBroker(_common.queue_url())


@broker.task(task_name="noop")
async def noop() -> None:
    """The no-op job."""
    await _common.anoop()


@broker.task(task_name="stamp")
async def stamp() -> None:
    """The latency job."""
    await _common.astamp()


@broker.task(task_name="sleepy")
async def sleepy(seconds: float) -> None:
    """The I/O-bound job."""
    await _common.asleepy(seconds)


CHUNK = 500


async def setup() -> None:
    await broker.startup()


async def teardown() -> None:
    await broker.shutdown()


async def send_noop(n: int) -> None:
    """No bulk send: ``kiq`` calls, a chunk of them at a time."""
    for first in range(0, n, CHUNK):
        await asyncio.gather(*(noop.kiq() for _ in range(min(CHUNK, n - first))))


async def send_sleep(n: int, seconds: float) -> None:
    for first in range(0, n, CHUNK):
        await asyncio.gather(*(sleepy.kiq(seconds) for _ in range(min(CHUNK, n - first))))


async def send_stamp() -> None:
    await stamp.kiq()
