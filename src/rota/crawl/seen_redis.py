"""A seen-set in Redis: one bitmap under the app's namespace.

The key is ``{rota:NAMESPACE}:crawl:NAME:seen:BITS:K`` (the store's hash tag,
so it lives in the namespace's Redis Cluster slot; the size in the name, so
a crawler sized again starts a fresh filter). A batch of URLs is one script
call (``lua/seen_add.lua``), so adding is atomic across the cluster.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import redis

from rota.crawl.seen import positions
from rota.stores.redis._conn import RedisOptions
from rota.stores.redis.keys import Keys

__all__ = ["RedisSeen"]

_LUA = Path(__file__).parent / "lua"


class RedisSeen:
    """A Bloom filter of ``bits`` bits and ``hashes`` positions per URL in the
    Redis store ``store_url``."""

    def __init__(self, store_url: str, name: str, bits: int, hashes: int) -> None:
        options = RedisOptions.parse(store_url)
        self.key = f"{Keys(options.namespace).prefix}crawl:{name}:seen:{bits}:{hashes}"
        self.bits, self.hashes = bits, hashes
        self._client = redis.Redis.from_url(options.url)
        self._add = self._client.register_script((_LUA / "seen_add.lua").read_text())
        self._has = self._client.register_script((_LUA / "seen_has.lua").read_text())

    def _args(self, urls: Sequence[str]) -> list[int]:
        args = [self.hashes]
        for url in urls:
            args += positions(url, self.bits, self.hashes)
        return args

    def add(self, urls: Sequence[str]) -> list[bool]:
        """See :meth:`rota.crawl.seen.SeenBackend.add`: one round trip."""
        if not urls:
            return []
        return [bool(v) for v in self._add(keys=[self.key], args=self._args(urls))]

    def contains(self, urls: Sequence[str]) -> list[bool]:
        """See :meth:`rota.crawl.seen.SeenBackend.contains`: one round trip."""
        if not urls:
            return []
        return [bool(v) for v in self._has(keys=[self.key], args=self._args(urls))]

    def memory(self) -> int:
        """Bytes Redis uses for the bitmap (``MEMORY USAGE``)."""
        return int(self._client.memory_usage(self.key, samples=0) or 0)

    def drop(self) -> None:
        """Delete the bitmap."""
        self._client.delete(self.key)

    def close(self) -> None:
        """Close the connection."""
        self._client.close()
