"""What every system's tasks record, the same way for all of them.

The apps (``app_*.py``) import this in the system's own interpreter; it needs
only the standard library, and it keeps the database out of the measurement:
reports travel as UDP datagrams on the loopback interface.

A finished job adds one to a counter and widens a span (earliest start,
latest end, ``time.time()``) kept in the worker process. A reporter thread of
that process sends them every REPORT_EVERY seconds, when they changed, to
``BENCH_REPORT_ADDR`` as ``PID N FIRST LAST`` (cumulative, so a lost datagram
costs nothing). The latency task sends the time it started to
``BENCH_STAMP_ADDR``, where the sending client waits for it.
"""

from __future__ import annotations

import asyncio
import os
import socket
import threading
import time

REPORT_EVERY = 0.005

_lock = threading.Lock()
_owner = 0  # the pid the counters below belong to
_count, _first, _last = 0, float("inf"), 0.0
_sock: tuple[int, socket.socket] | None = None


def address(name: str) -> tuple[str, int]:
    """``host:port`` of the environment variable ``name``."""
    host, port = os.environ[name].rsplit(":", 1)
    return host, int(port)


def _socket() -> socket.socket:
    """A UDP socket of this process (made again after a fork)."""
    global _sock
    if _sock is None or _sock[0] != os.getpid():
        _sock = (os.getpid(), socket.socket(socket.AF_INET, socket.SOCK_DGRAM))
    return _sock[1]


def _reporter(pid: int) -> None:
    target = address("BENCH_REPORT_ADDR")
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sent = -1
    while True:
        time.sleep(REPORT_EVERY)
        with _lock:
            count, first, last = _count, _first, _last
        if count != sent:
            sock.sendto(f"{pid} {count} {first!r} {last!r}".encode(), target)
            sent = count


def done(started: float) -> None:
    """Record a finished job that started at ``started``."""
    global _owner, _count, _first, _last
    ended = time.time()
    pid = os.getpid()
    with _lock:
        if _owner != pid:  # first job of this process
            _owner, _count, _first, _last = pid, 0, float("inf"), 0.0
            threading.Thread(target=_reporter, args=(pid,), daemon=True).start()
        _count += 1
        _first = min(_first, started)
        _last = max(_last, ended)


def stamp() -> None:
    """Tell the waiting client that the latency task started now."""
    _socket().sendto(repr(time.time()).encode(), address("BENCH_STAMP_ADDR"))


# -- the tasks' bodies -------------------------------------------------------------


def noop() -> None:
    """The no-op job: only its report."""
    done(time.time())


def sleepy(seconds: float) -> None:
    """The I/O-bound job: a blocking sleep, then its report."""
    started = time.time()
    time.sleep(seconds)
    done(started)


async def asleepy(seconds: float) -> None:
    """The I/O-bound job for ``async def`` tasks: ``asyncio.sleep``."""
    started = time.time()
    await asyncio.sleep(seconds)
    done(started)
