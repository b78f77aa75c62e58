"""Huey: the benchmark's tasks and how the benchmark sends them.

The tasks return None, so Huey stores no result. The queue is the run's
private Redis, or the SQLite file ``BENCH_SQLITE_PATH`` when it is set.
"""

from __future__ import annotations

import os

import _common
from huey import RedisHuey, SqliteHuey

if "BENCH_SQLITE_PATH" in os.environ:
    huey = SqliteHuey("bench", filename=os.environ["BENCH_SQLITE_PATH"])
else:
    huey = RedisHuey("bench", url=_common.queue_url())


@huey.task(name="noop")
def noop() -> None:
    """The no-op job."""
    _common.noop()


@huey.task(name="stamp")
def stamp() -> None:
    """The latency job."""
    _common.stamp()


@huey.task(name="sleepy")
def sleepy(seconds: float) -> None:
    """The I/O-bound job."""
    _common.sleepy(seconds)


def send_noop(n: int) -> None:
    """Huey has no bulk send: one enqueue per task."""
    for _ in range(n):
        noop()


def send_sleep(n: int, seconds: float) -> None:
    for _ in range(n):
        sleepy(seconds)


def send_stamp() -> None:
    stamp()
