"""The no-op task for Huey (the Redis URL comes from PEER_REDIS_URL)."""

import os

from huey import RedisHuey

huey = RedisHuey("bench", url=os.environ["PEER_REDIS_URL"])


@huey.task()
def noop(i: int) -> int:
    """Do nothing; return the argument."""
    return i
