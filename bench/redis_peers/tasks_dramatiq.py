"""The no-op actor for Dramatiq (the broker URL comes from PEER_REDIS_URL)."""

import os

import dramatiq
from dramatiq.brokers.redis import RedisBroker

dramatiq.set_broker(RedisBroker(url=os.environ["PEER_REDIS_URL"]))


@dramatiq.actor(max_retries=0)
def noop(i: int) -> int:
    """Do nothing; return the argument."""
    return i
