"""A compact seen-set for very large frontiers: one Bloom filter per crawler.

Exact dedup (a fetch job's unique key is its URL) costs the store a key or
row per URL. ``Crawler(..., seen=SeenSet(capacity=10_000_000,
error_rate=0.01))`` adds a Bloom filter shared by every worker of the
cluster in front of it: a discovered link whose bits are all set already is
not sent at all. The filter takes ``-ln(p) / ln(2)^2`` bits per URL for a
false-positive rate ``p`` (9.6 bits, 1.2 bytes, at 1 %), whatever the URLs'
length, and cannot forget: see docs/crawling.md ("Very large frontiers")
for how it meets recrawls.

Where it lives follows the app's store: a bitmap under the app's Redis
namespace (:mod:`rota.crawl.seen_redis`), or a file beside the app's SQLite
database (:mod:`rota.crawl.seen_file`). Adding a batch of URLs is one
atomic step in either, so two workers adding the same URL never both see it
new. PostgreSQL and MySQL stores keep exact dedup only.
"""

from __future__ import annotations

import hashlib
import math
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from rota.errors import InvalidArgument

if TYPE_CHECKING:
    from rota.app import App

__all__ = ["SeenBackend", "SeenFilter", "SeenSet", "bloom_size", "positions"]

#: The store URL schemes whose apps can hold a seen-set.
SUPPORTED = ("redis", "rediss", "unix", "sqlite")
#: The most bits one filter may have (a Redis string holds 2^32 bits).
MAX_BITS = 2**32


def bloom_size(capacity: int, error_rate: float) -> tuple[int, int]:
    """The bits ``m`` and hash positions ``k`` of a Bloom filter that holds
    ``capacity`` items at a false-positive rate of ``error_rate``:
    ``m = ceil(-n ln p / ln(2)^2)``, ``k = round(m / n * ln 2)`` (at least 1)."""
    bits = math.ceil(-capacity * math.log(error_rate) / math.log(2) ** 2)
    return bits, max(1, round(bits / capacity * math.log(2)))


def positions(url: str, bits: int, hashes: int) -> list[int]:
    """The ``hashes`` bit positions (below ``bits``) of ``url``, by double
    hashing of one 128-bit BLAKE2b digest: ``h1 + i * h2 mod bits``."""
    digest = hashlib.blake2b(url.encode(), digest_size=16).digest()
    h1 = int.from_bytes(digest[:8], "little")
    h2 = int.from_bytes(digest[8:], "little") | 1
    return [(h1 + i * h2) % bits for i in range(hashes)]


class SeenBackend(Protocol):
    """Where a seen-set's bits live."""

    def add(self, urls: Sequence[str]) -> list[bool]:
        """Add ``urls`` in one atomic step; for each, True if it was new (some
        of its bits were not set yet, also by an earlier URL of the batch)."""
        ...

    def contains(self, urls: Sequence[str]) -> list[bool]:
        """For each of ``urls``, whether it is (probably) in the set."""
        ...

    def close(self) -> None:
        """Let go of connections, files and maps."""
        ...


@dataclass(frozen=True, slots=True)
class SeenSet:
    """The size of a crawler's seen-set: ``capacity`` URLs at a false-positive
    rate of ``error_rate`` (past its capacity the rate grows). A false
    positive is a new link taken for a seen one, so not crawled."""

    capacity: int = 10_000_000
    error_rate: float = 0.01

    def __post_init__(self) -> None:
        if not isinstance(self.capacity, int) or isinstance(self.capacity, bool):
            raise InvalidArgument(f"capacity must be a whole number, not {self.capacity!r}")
        if self.capacity < 1:
            raise InvalidArgument(f"capacity must be at least 1, not {self.capacity}")
        rate = self.error_rate
        if not isinstance(rate, int | float) or isinstance(rate, bool) or not 0 < rate < 1:
            raise InvalidArgument(f"error_rate must be between 0 and 1 (exclusive), not {rate!r}")
        bits = self.size[0]
        if bits > MAX_BITS:
            raise InvalidArgument(
                f"a seen-set of {self.capacity} URLs at {rate} needs {bits} bits, more than "
                f"the {MAX_BITS} one filter holds: lower the capacity or raise the error rate"
            )

    @property
    def size(self) -> tuple[int, int]:
        """Its bits and hash positions per URL (:func:`bloom_size`)."""
        return bloom_size(self.capacity, self.error_rate)

    def check(self, store_url: str) -> None:
        """Refuse (:class:`InvalidArgument`) an app whose store cannot hold it."""
        scheme = store_url.partition(":")[0].lower()
        if scheme not in SUPPORTED:
            raise InvalidArgument(
                f"a seen-set needs the app's store on Redis or SQLite, not {scheme}: "
                "PostgreSQL and MySQL stores keep exact dedup only (leave seen=None)"
            )

    def open(self, store_url: str, name: str) -> SeenBackend:
        """Open the filter ``name`` in the app's store ``store_url`` (made on
        first use, sized as this says; one made with another size is
        refused)."""
        self.check(store_url)
        bits, hashes = self.size
        if store_url.lower().startswith("sqlite:"):
            from rota.crawl.seen_file import FileSeen

            return FileSeen(_sqlite_path(store_url) + f"-seen-{name}", bits, hashes)
        from rota.crawl.seen_redis import RedisSeen

        return RedisSeen(store_url, name, bits, hashes)


def _sqlite_path(url: str) -> str:
    """The database file of a SQLite store URL, read as the store reads it."""
    path = url[len("sqlite://") :].partition("?")[0]
    path = (path[1:] or ":memory:") if path.startswith("/") else (path or "rota.db")
    if path == ":memory:":
        raise InvalidArgument("a seen-set needs a SQLite store in a file, not in memory")
    return path


class SeenFilter:
    """A crawler's seen-set as each process uses it, in the app's store:
    opened on first use in each process (a fork gets its own connection,
    file and lock), shared by the process's threads."""

    def __init__(self, seen: SeenSet, app: App, name: str) -> None:
        seen.check(app.url)
        self.seen, self._app, self._name = seen, app, name
        self._backend: SeenBackend | None = None
        self._pid = 0
        self._lock = threading.Lock()

    def backend(self) -> SeenBackend:
        """This process's backend."""
        with self._lock:
            if self._backend is None or self._pid != os.getpid():
                self._backend = self.seen.open(self._app.url, self._name)
                self._pid = os.getpid()
            return self._backend

    def new(self, urls: Sequence[str]) -> list[str]:
        """Add ``urls``; those that were not in the set yet."""
        if not urls:
            return []
        return [url for url, new in zip(urls, self.backend().add(urls), strict=True) if new]

    def close(self) -> None:
        """Close this process's backend, if open (a worker's stop hook)."""
        with self._lock:
            backend, self._backend = self._backend, None
            if backend is not None and self._pid == os.getpid():
                backend.close()
