"""What every system's tasks record, the same way for all of them.

The apps (``app_*.py``) import this in the system's own interpreter; it needs
only redis-py. The private Redis of the run is ``BENCH_REDIS_URL``.

A finished job adds one to a counter and widens a span (earliest start,
latest end, ``time.time()``). By default these live in the worker process and
a reporter thread of that process writes them every REPORT_EVERY seconds to
the hash ``bench:done`` (fields ``PID:n``, ``PID:first``, ``PID:last``; one set
per process, so pools of child processes add up): a job itself does no I/O,
and the figures measure the queue, not the report. With
``BENCH_REPORT=redis`` each job writes them itself instead, one pipelined
round trip per job (``0:n`` in the hash, ``first`` and ``last`` in the sorted
set ``bench:span``, kept with ``ZADD LT``/``GT``), which every system pays alike.

The latency task pushes the time it started to the list ``bench:stamps``.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from typing import Any

import redis
import redis.asyncio

DONE = "bench:done"
SPAN = "bench:span"
STAMPS = "bench:stamps"
REPORT_EVERY = 0.005

_lock = threading.Lock()
_owner = 0  # the pid the counters below belong to
_count, _first, _last = 0, float("inf"), 0.0
_sync: tuple[int, redis.Redis] | None = None
_async: dict[asyncio.AbstractEventLoop, redis.asyncio.Redis] = {}


def url() -> str:
    """The private Redis of this run."""
    return os.environ["BENCH_REDIS_URL"]


def in_task() -> bool:
    """Whether each job writes its own report (``BENCH_REPORT=redis``)."""
    return os.environ.get("BENCH_REPORT") == "redis"


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


# -- the report ------------------------------------------------------------------


def _reporter(pid: int) -> None:
    conn = redis.Redis.from_url(url())
    written = -1
    while True:
        time.sleep(REPORT_EVERY)
        with _lock:
            count, first, last = _count, _first, _last
        if count != written:
            conn.hset(DONE, mapping={f"{pid}:n": count, f"{pid}:first": first, f"{pid}:last": last})
            written = count


def _add(started: float, ended: float) -> None:
    global _owner, _count, _first, _last
    pid = os.getpid()
    with _lock:
        if _owner != pid:  # first job of this process (or of a forked child)
            _owner, _count, _first, _last = pid, 0, float("inf"), 0.0
            threading.Thread(target=_reporter, args=(pid,), daemon=True).start()
        _count += 1
        _first = min(_first, started)
        _last = max(_last, ended)


def _write(pipe: Any, started: float, ended: float) -> None:
    pipe.hincrby(DONE, "0:n", 1)
    pipe.zadd(SPAN, {"first": started}, lt=True)
    pipe.zadd(SPAN, {"last": ended}, gt=True)


def done(started: float) -> None:
    """Record a finished job that started at ``started``."""
    if not in_task():
        _add(started, time.time())
        return
    pipe = client().pipeline(transaction=False)
    _write(pipe, started, time.time())
    pipe.execute()


async def adone(started: float) -> None:
    """:func:`done` for ``async def`` tasks."""
    if not in_task():
        _add(started, time.time())
        return
    pipe = aclient().pipeline(transaction=False)
    _write(pipe, started, time.time())
    await pipe.execute()


def stamp() -> None:
    """Record that the latency task started now."""
    client().rpush(STAMPS, repr(time.time()))


async def astamp() -> None:
    """:func:`stamp` for ``async def`` tasks."""
    await aclient().rpush(STAMPS, repr(time.time()))


# -- the tasks' bodies -------------------------------------------------------------


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
