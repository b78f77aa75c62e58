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

With ``BENCH_BODY=roundtrip`` the no-op and I/O-bound jobs also do one Redis
round trip of their own, the same for every system: a pipelined ``INCR
bench:body`` on a connection this module opens (one per process, or per
event loop), to the Redis the system queues on (``BENCH_QUEUE_URL``; the
report Redis when unset). The counter tells how many bodies ran.
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
BODY = os.environ.get("BENCH_BODY_KEY", "bench:body")  # the counter the bodies increment
REPORT_EVERY = 0.005

_lock = threading.Lock()
_making = threading.Lock()  # one thread makes a process's client; the rest wait for it
_owner = 0  # the pid the counters below belong to
_count, _first, _last = 0, float("inf"), 0.0
_sync: tuple[int, redis.Redis] | None = None
_async: dict[asyncio.AbstractEventLoop, redis.asyncio.Redis] = {}
_body: tuple[int, redis.Redis] | None = None
_abody: dict[asyncio.AbstractEventLoop, redis.asyncio.Redis] = {}


def url() -> str:
    """The private Redis of this run."""
    return os.environ["BENCH_REDIS_URL"]


def queue_url() -> str:
    """The Redis the system under test queues on (the report Redis when unset)."""
    return os.environ.get("BENCH_QUEUE_URL") or url()


def in_task() -> bool:
    """Whether each job writes its own report (``BENCH_REPORT=redis``)."""
    return os.environ.get("BENCH_REPORT") == "redis"


def client() -> redis.Redis:
    """A client for this process (made again after a fork)."""
    global _sync
    found = _sync
    if found is None or found[0] != os.getpid():
        with _making:  # two made at once: the one dropped would close the other's sockets
            if _sync is None or _sync[0] != os.getpid():
                _sync = (os.getpid(), redis.Redis.from_url(url()))
            found = _sync
    return found[1]


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


def with_roundtrip() -> bool:
    """Whether jobs do a round trip of their own (``BENCH_BODY=roundtrip``)."""
    return os.environ.get("BENCH_BODY") == "roundtrip"


def roundtrip() -> None:
    """The job's own round trip: a pipelined ``INCR`` (if asked for)."""
    global _body
    if not with_roundtrip():
        return
    found = _body
    if found is None or found[0] != os.getpid():
        with _making:  # as in client()
            if _body is None or _body[0] != os.getpid():
                _body = (os.getpid(), redis.Redis.from_url(queue_url()))
            found = _body
    pipe = found[1].pipeline(transaction=False)
    pipe.execute_command("INCR", BODY)  # redis-py's incr() sends INCRBY
    pipe.execute()


async def aroundtrip() -> None:
    """:func:`roundtrip` for ``async def`` tasks, on the running loop's connection."""
    if not with_roundtrip():
        return
    loop = asyncio.get_running_loop()
    if loop not in _abody:
        _abody[loop] = redis.asyncio.Redis.from_url(queue_url())
    pipe = _abody[loop].pipeline(transaction=False)
    pipe.execute_command("INCR", BODY)  # redis-py's incr() sends INCRBY
    await pipe.execute()


def noop() -> None:
    """The no-op job: its round trip if asked for, and its report."""
    started = time.time()
    roundtrip()
    done(started)


async def anoop() -> None:
    """The no-op job for ``async def`` tasks."""
    started = time.time()
    await aroundtrip()
    await adone(started)


def sleepy(seconds: float) -> None:
    """The I/O-bound job: a blocking sleep, its round trip if asked for, its report."""
    started = time.time()
    time.sleep(seconds)
    roundtrip()
    done(started)


async def asleepy(seconds: float) -> None:
    """The I/O-bound job for ``async def`` tasks: ``asyncio.sleep``."""
    started = time.time()
    await asyncio.sleep(seconds)
    await aroundtrip()
    await adone(started)
