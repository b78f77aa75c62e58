"""The no-op function for arq (the Redis URL comes from PEER_REDIS_URL)."""

import os
from typing import Any

from arq.connections import RedisSettings


async def noop(ctx: dict[str, Any], i: int) -> int:
    """Do nothing; return the argument."""
    return i


class WorkerSettings:
    """arq's worker settings: one function, results kept, PEER_CONCURRENCY jobs at a time."""

    functions = [noop]
    redis_settings = RedisSettings.from_dsn(os.environ["PEER_REDIS_URL"])
    max_jobs = int(os.environ.get("PEER_CONCURRENCY", "100"))
    burst = True
