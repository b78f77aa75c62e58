"""Connections to Redis: URL options, reconnect with backoff, one log line per outage."""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import redis
from redis.backoff import ExponentialBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from redis.retry import Retry

from rota.errors import InvalidArgument

log = logging.getLogger("rota.stores.redis")

T = TypeVar("T")

#: Longest single blocking wait; ``wait`` returns early (allowed) past it.
MAX_BLOCK = 30.0


@dataclass(frozen=True, slots=True)
class RedisOptions:
    """What a ``redis://`` or ``rediss://`` URL says, split into rota's options
    (``namespace``, ``retry_for``) and the URL redis-py opens."""

    url: str
    namespace: str = "default"
    retry_for: float = 30.0

    @classmethod
    def parse(cls, url: str) -> RedisOptions:
        """Read ``namespace=`` (default ``"default"``) and ``retry_for=`` (seconds
        a call keeps retrying through an outage, default 30) from the query string;
        every other query option goes to redis-py."""
        parts = urlsplit(url)
        if parts.scheme not in ("redis", "rediss", "unix"):
            raise InvalidArgument(f"not a Redis URL: scheme {parts.scheme!r}")
        rest: list[tuple[str, str]] = []
        namespace, retry_for = "default", 30.0
        for key, value in parse_qsl(parts.query, keep_blank_values=True):
            if key == "namespace":
                namespace = value
            elif key == "retry_for":
                try:
                    retry_for = float(value)
                except ValueError:
                    raise InvalidArgument(f"retry_for must be seconds, not {value!r}") from None
            else:
                rest.append((key, value))
        if not namespace or "{" in namespace or "}" in namespace:
            raise InvalidArgument(f"namespace must be non-empty and free of braces: {namespace!r}")
        plain = urlunsplit(parts._replace(query=urlencode(rest)))
        return cls(plain, namespace, retry_for)


class _Outage:
    """Shared by every connection of one store: when the current outage began."""

    def __init__(self, where: str) -> None:
        self.where = where
        self.since: float | None = None
        self._lock = threading.Lock()

    def failed(self, error: Exception) -> float:
        """Note a failure; log the first of an outage. Returns when the outage began."""
        with self._lock:
            if self.since is None:
                self.since = time.monotonic()
                log.warning(
                    "lost the connection to Redis at %s (%s); reconnecting", self.where, error
                )
            return self.since

    def succeeded(self) -> None:
        """Note a success; log the end of an outage."""
        if self.since is None:
            return
        with self._lock:
            if self.since is not None:
                down = time.monotonic() - self.since
                log.warning("reconnected to Redis at %s after %.1f s", self.where, down)
                self.since = None


class OutageRetry(Retry):
    """redis-py's :class:`Retry` with exponential backoff, bounded by time.

    Every call keeps retrying on connection errors and timeouts until the
    outage is ``budget`` seconds old, then raises. The first failure of an
    outage and its end are logged once, whichever thread sees them. Nested
    calls (redis-py reconnects inside a retried command) do not retry on
    their own: the outermost call owns the retries.

    Only a command that Redis answered ends an outage. redis-py runs commands
    and pipelines with ``with_failure_count=True``, and the pool's
    ``connect()`` without it; that one succeeds without any I/O when the
    pooled connection still holds a socket, so it proves nothing.
    """

    def __init__(self, budget: float, outage: _Outage) -> None:
        super().__init__(
            ExponentialBackoff(cap=1.0, base=0.025),
            retries=-1,
            supported_errors=(RedisConnectionError, RedisTimeoutError, socket.timeout),
        )
        self.budget = budget
        self.outage = outage
        self._depth = threading.local()

    def __deepcopy__(self, memo: dict[int, Any]) -> OutageRetry:
        return self  # one retry policy (and one outage record) for every connection

    def call_with_retry(
        self,
        do: Callable[[], T],
        fail: Callable[..., Any],
        is_retryable: Callable[[Exception], bool] | None = None,
        with_failure_count: bool = False,
    ) -> T:
        depth = getattr(self._depth, "n", 0)
        self._depth.n = depth + 1
        try:
            return self._attempts(do, fail, is_retryable, with_failure_count, nested=depth > 0)
        finally:
            self._depth.n = depth

    def _attempts(
        self,
        do: Callable[[], T],
        fail: Callable[..., Any],
        is_retryable: Callable[[Exception], bool] | None,
        with_failure_count: bool,
        *,
        nested: bool,
    ) -> T:
        failures = 0
        while True:
            try:
                result = do()
            except self._supported_errors as error:
                if is_retryable is not None and not is_retryable(error):
                    raise
                failures += 1
                if with_failure_count:
                    fail(error, failures)
                else:
                    fail(error)
                since = self.outage.failed(error)
                if nested or time.monotonic() - since >= self.budget:
                    raise
                time.sleep(self._backoff.compute(failures))
            else:
                if not nested and with_failure_count:
                    self.outage.succeeded()
                return result


def clients(options: RedisOptions, where: str) -> tuple[redis.Redis, redis.Redis]:
    """The command client and the client for blocking waits (its own pool, and a
    socket timeout above the longest block)."""
    retry = OutageRetry(options.retry_for, _Outage(where))
    common: dict[str, Any] = {
        "retry": retry,
        "socket_connect_timeout": 5.0,
        "socket_keepalive": True,
        "health_check_interval": 30,
    }
    main = redis.Redis.from_url(options.url, socket_timeout=15.0, **common)
    blocking = redis.Redis.from_url(options.url, socket_timeout=MAX_BLOCK + 10.0, **common)
    return main, blocking
