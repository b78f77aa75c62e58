"""The Redis store: ``redis://host:port/db?namespace=NAME``.

Needs the ``redis`` extra (redis-py with hiredis).
"""

from rota.stores.redis.store import RedisStore

__all__ = ["RedisStore"]
