"""State shared by the parts of the Redis store: clients, keys, scripts."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, Concatenate, ParamSpec, Protocol, TypeVar

from rota._ids import unique_ids
from rota.stores.redis._conn import Reconnect, RedisOptions, WaitLane, clients
from rota.stores.redis.keys import Keys
from rota.stores.redis.scripts import EncodableArg, Scripts

P = ParamSpec("P")
R = TypeVar("R")
S = TypeVar("S", bound="_Reconnecting")


class _Reconnecting(Protocol):
    _reconnect: Reconnect


def guarded(method: Callable[Concatenate[S, P], R]) -> Callable[Concatenate[S, P], R]:
    """Run a store operation through connection outages (:class:`Reconnect`):
    repeated after a connection failure, :class:`StoreUnavailable` once the
    outage is ``retry_for`` seconds old. Only for operations that may run
    twice; batches that must not run script calls through ``_run``, which
    repeats the very same call (same request id)."""

    @functools.wraps(method)
    def call(self: S, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return self._reconnect.call(lambda: method(self, *args, **kwargs))

    return call


def _redact(url: str) -> str:
    from rota.stores import redact_url

    return redact_url(url)


class RedisBase:
    """Connections (opened lazily by redis-py on first command) and script runner."""

    def __init__(self, options: RedisOptions) -> None:
        self.options = options
        self.keys = Keys(options.namespace)
        self._client, self._blocking, self._reconnect = clients(options, _redact(options.url))
        self._scripts = Scripts(self._client, self.keys)
        self._waits = WaitLane(self._blocking)  # blocking pops: the wake-up path of idle workers

    def _run(
        self, name: str, args: Sequence[EncodableArg] = (), extra_keys: Sequence[str] = ()
    ) -> Any:
        return self._reconnect.call(lambda: self._scripts.run(name, args, extra_keys))

    def _request_id(self) -> str:
        """A fresh id under which a batch's reply is remembered, so a call repeated
        after a lost connection returns the first reply instead of acting twice.
        It says how long Redis keeps the reply (:meth:`_remembered_for`)."""
        return f"{self._remembered_for()}/{unique_ids.next()}"

    def _remembered_for(self) -> int:
        """Seconds Redis keeps a batch's reply: as long as calls keep retrying, and 30 more."""
        return int(self.options.retry_for) + 30

    @guarded
    def now(self) -> float:
        """The store's clock: Redis TIME."""
        seconds, micros = self._client.time()
        return float(seconds) + micros / 1_000_000

    def close(self) -> None:
        """Close every connection."""
        self._scripts.close()
        self._waits.close()
        self._client.close()
        self._blocking.close()
