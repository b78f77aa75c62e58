"""State shared by the parts of the Redis store: clients, keys, scripts."""

from __future__ import annotations

import functools
import secrets
from collections.abc import Callable, Sequence
from typing import Any, ParamSpec, TypeVar

from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from rota.errors import StoreUnavailable
from rota.stores.redis._conn import RedisOptions, clients
from rota.stores.redis.keys import Keys
from rota.stores.redis.scripts import EncodableArg, Scripts

P = ParamSpec("P")
R = TypeVar("R")


def guarded(method: Callable[P, R]) -> Callable[P, R]:
    """Turn redis-py's connection errors and timeouts, raised once reconnecting
    has gone on for ``retry_for`` seconds, into :class:`StoreUnavailable`."""

    @functools.wraps(method)
    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return method(*args, **kwargs)
        except (RedisConnectionError, RedisTimeoutError) as exc:
            raise StoreUnavailable(f"the Redis store is unreachable: {exc}") from exc

    return call


def _redact(url: str) -> str:
    from rota.stores import redact_url

    return redact_url(url)


class RedisBase:
    """Connections (opened lazily by redis-py on first command) and script runner."""

    def __init__(self, options: RedisOptions) -> None:
        self.options = options
        self.keys = Keys(options.namespace)
        self._client, self._blocking = clients(options, _redact(options.url))
        self._scripts = Scripts(self._client, self.keys)

    def _run(
        self, name: str, args: Sequence[EncodableArg] = (), extra_keys: Sequence[str] = ()
    ) -> Any:
        return self._scripts.run(name, args, extra_keys)

    @staticmethod
    def _request_id() -> str:
        """A fresh id under which a batch's reply is remembered, so a call repeated
        after a lost connection returns the first reply instead of acting twice."""
        return secrets.token_hex(12)

    @guarded
    def now(self) -> float:
        """The store's clock: Redis TIME."""
        seconds, micros = self._client.time()
        return float(seconds) + micros / 1_000_000

    def close(self) -> None:
        """Close both connection pools."""
        self._client.close()
        self._blocking.close()
