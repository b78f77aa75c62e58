"""Celery: the benchmark's tasks and how the benchmark sends them.

No result backend (Celery's default): nothing is stored per job.
"""

from __future__ import annotations

import _common
from celery import Celery

app = Celery("bench", broker=_common.queue_url())
app.conf.update(
    task_ignore_result=True,
    broker_connection_retry_on_startup=True,
)


@app.task(name="noop")
def noop() -> None:
    """The no-op job."""
    _common.noop()


@app.task(name="stamp")
def stamp() -> None:
    """The latency job."""
    _common.stamp()


@app.task(name="sleepy")
def sleepy(seconds: float) -> None:
    """The I/O-bound job."""
    _common.sleepy(seconds)


def send_noop(n: int) -> None:
    """Celery has no bulk send: one publish per job over one producer."""
    with app.producer_or_acquire() as producer:
        for _ in range(n):
            noop.apply_async(producer=producer)


def send_sleep(n: int, seconds: float) -> None:
    with app.producer_or_acquire() as producer:
        for _ in range(n):
            sleepy.apply_async((seconds,), producer=producer)


def send_stamp() -> None:
    stamp.apply_async()
