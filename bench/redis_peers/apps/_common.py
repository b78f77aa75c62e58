"""What every system's tasks record, the same way for all of them.

The apps (``app_*.py``) import this in the system's own interpreter; it needs
only redis-py. The private Redis of the run is ``BENCH_REDIS_URL``. Every task
reports in one pipelined round trip:

- ``bench:done`` — a counter of finished jobs (``INCR``);
- ``bench:span`` — a sorted set with ``first`` (the earliest start, kept with
  ``ZADD LT``) and ``last`` (the latest end, ``ZADD GT``);
- ``bench:stamps`` — for the latency task, the time it started (``RPUSH``).

Times are ``time.time()``: the tasks and the benchmark run on one machine.
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

import redis
import redis.asyncio

DONE = "bench:done"
SPAN = "bench:span"
STAMPS = "bench:stamps"

_sync: tuple[int, redis.Redis] | None = None
_async: dict[asyncio.AbstractEventLoop, redis.asyncio.Redis] = {}


def url() -> str:
    """The private Redis of this run."""
    return os.environ["BENCH_REDIS_URL"]


def client() -> redis.Redis:
    """A client for this process (made again after a fork)."""
    global _sync
    if _sync is None or _sync[0] != os.getpid():
        _sync = (os.getpid(), redis.Redis.from_url(url()))
    return _sync[1]


def aclient() -> redis.asyncio.Redis:
    """An asyncio client for the running event loop."""
    loop = asyncio.get_running_loop()
    if loop not in _async:
        _async[loop] = redis.asyncio.Redis.from_url(url())
    return _async[loop]


def _span(pipe: Any, started: float, ended: float) -> None:
    pipe.zadd(SPAN, {"first": started}, lt=True)
    pipe.zadd(SPAN, {"last": ended}, gt=True)
    pipe.incr(DONE)


def done(started: float) -> None:
    """Record a finished job that started at ``started``."""
    pipe = client().pipeline(transaction=False)
    _span(pipe, started, time.time())
    pipe.execute()


async def adone(started: float) -> None:
    """:func:`done` for ``async def`` tasks."""
    pipe = aclient().pipeline(transaction=False)
    _span(pipe, started, time.time())
    await pipe.execute()


def stamp() -> None:
    """Record that the latency task started now."""
    client().rpush(STAMPS, repr(time.time()))


async def astamp() -> None:
    """:func:`stamp` for ``async def`` tasks."""
    await aclient().rpush(STAMPS, repr(time.time()))


def noop() -> None:
    """The no-op job: only its report."""
    done(time.time())


async def anoop() -> None:
    """The no-op job for ``async def`` tasks."""
    await adone(time.time())


def sleepy(seconds: float) -> None:
    """The I/O-bound job: a blocking sleep, then its report."""
    started = time.time()
    time.sleep(seconds)
    done(started)


async def asleepy(seconds: float) -> None:
    """The I/O-bound job for ``async def`` tasks: ``asyncio.sleep``."""
    started = time.time()
    await asyncio.sleep(seconds)
    await adone(started)
