"""Dramatiq: the benchmark's actors and how the benchmark sends them.

No Results middleware (Dramatiq's default): nothing is stored per message.
"""

from __future__ import annotations

import _common
import dramatiq
from dramatiq.brokers.redis import RedisBroker

broker = RedisBroker(url=_common.queue_url())
dramatiq.set_broker(broker)


@dramatiq.actor(actor_name="noop")
def noop() -> None:
    """The no-op job."""
    _common.noop()


@dramatiq.actor(actor_name="stamp")
def stamp() -> None:
    """The latency job."""
    _common.stamp()


@dramatiq.actor(actor_name="sleepy")
def sleepy(seconds: float) -> None:
    """The I/O-bound job."""
    _common.sleepy(seconds)


def send_noop(n: int) -> None:
    """Dramatiq has no bulk send: one enqueue per message."""
    for _ in range(n):
        noop.send()


def send_sleep(n: int, seconds: float) -> None:
    for _ in range(n):
        sleepy.send(seconds)


def send_stamp() -> None:
    stamp.send()
