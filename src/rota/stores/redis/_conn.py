"""Connections to Redis: URL options, reconnect with backoff, one log line per outage."""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import redis
from redis.backoff import ExponentialBackoff, NoBackoff
from redis.connection import DefaultParser
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError
from redis.retry import Retry

from rota.errors import InvalidArgument, StoreUnavailable

_pack: Callable[[tuple[Any, ...]], bytes] | None
try:  # packs a command in one call; redis-py's own packer adds a pass over the arguments
    from hiredis import pack_command as _pack
except ImportError:  # pragma: no cover - hiredis comes with the redis extra
    _pack = None

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
    """Shared by every connection of one store: when the current outage began.

    A failure within ``QUIET`` seconds of the end of an outage continues that
    outage instead of starting a new one: a restarted Redis accepts
    connections (ending the outage) and then answers ``LOADING`` for a while.
    """

    QUIET = 10.0

    def __init__(self, where: str) -> None:
        self.where = where
        self.since: float | None = None
        self._began = 0.0
        self._ended: float | None = None
        self._lock = threading.Lock()

    def failed(self, error: Exception) -> float:
        """Note a failure; log the first of an outage. Returns when the outage began."""
        with self._lock:
            if self.since is None:
                now = time.monotonic()
                if self._ended is not None and now - self._ended < self.QUIET:
                    self.since = self._began  # the same outage, still going on
                else:
                    self.since = self._began = now
                    log.warning(
                        "lost the connection to Redis at %s (%s); reconnecting", self.where, error
                    )
            return self.since

    def succeeded(self) -> None:
        """Note an answer from Redis; log the end of an outage (once)."""
        with self._lock:
            if self.since is None:
                return
            now = time.monotonic()
            if self._ended is None or self._ended < self._began:
                log.warning("reconnected to Redis at %s after %.1f s", self.where, now - self.since)
            self.since = None
            self._ended = now


_RETRIED = (RedisConnectionError, RedisTimeoutError, socket.timeout)


class Reconnect:
    """Runs store operations through outages: redis-py's :class:`Retry` with
    exponential backoff (25 ms doubling to 1 s) on connection errors and
    timeouts, for up to ``budget`` seconds from the start of the outage, then
    :class:`StoreUnavailable`.

    It wraps whole store operations rather than living inside redis-py's
    clients, because redis-py (before 6) takes a pooled connection outside
    its own retry loop; the clients themselves do not retry. An outage is
    logged when its first failure is seen and when Redis answers again (see
    :func:`answer_parser`), once, whichever thread sees it.
    """

    def __init__(self, budget: float, outage: _Outage) -> None:
        self.budget = budget
        self.outage = outage
        self._retry = Retry(
            ExponentialBackoff(cap=1.0, base=0.025), retries=-1, supported_errors=_RETRIED
        )

    def call(self, operation: Callable[[], T]) -> T:
        """``operation()``, repeated after connection failures until it returns."""
        try:  # the usual case, without setting up the retry loop
            return operation()
        except _RETRIED as error:
            self._failed(error)
        return self._retry.call_with_retry(operation, self._failed)

    def _failed(self, error: Exception) -> None:
        since = self.outage.failed(error)
        if time.monotonic() - since >= self.budget:
            raise StoreUnavailable(
                f"the Redis store at {self.outage.where} is unreachable: {error}"
            ) from error


_PARSER: Any = DefaultParser  # redis-py's choice: hiredis when installed


def answer_parser(outage: _Outage) -> type:
    """redis-py's reply parser, reporting every reply read to ``outage``.
    Error replies that mean Redis cannot serve yet (``LOADING``) are raised
    as connection errors before that, so they do not end an outage."""

    class AnswerParser(_PARSER):  # type: ignore[misc]
        def read_response(self, *args: Any, **kwargs: Any) -> Any:
            response = super().read_response(*args, **kwargs)
            if outage.since is not None:
                outage.succeeded()
            return response

    return AnswerParser


def clients(options: RedisOptions, where: str) -> tuple[redis.Redis, redis.Redis, Reconnect]:
    """The command client, the client for blocking waits (its own pool, and a
    socket timeout above the longest block), and their :class:`Reconnect`."""
    outage = _Outage(where)
    common: dict[str, Any] = {
        "retry": Retry(NoBackoff(), 0),
        "parser_class": answer_parser(outage),
        "socket_connect_timeout": 5.0,
        "socket_keepalive": True,
        "health_check_interval": 30,
    }
    main = redis.Redis.from_url(options.url, socket_timeout=15.0, **common)
    blocking = redis.Redis.from_url(options.url, socket_timeout=MAX_BLOCK + 10.0, **common)
    return main, blocking, Reconnect(options.retry_for, outage)


class Lane:
    """Connections for the hot path, the store's script calls: a call takes an
    idle connection (or opens one), sends the command, reads the reply and
    puts the connection back. It skips what a redis-py client call adds on
    top (a poll of the socket and metrics on every checkout), which costs more
    than the script itself on small calls. A connection that failed is
    closed, never reused; after a fork the child opens its own."""

    def __init__(self, client: redis.Redis) -> None:
        self._pool = client.connection_pool
        # redis-py's Connection (its methods are untyped); list.pop/append are atomic
        self._idle: list[Any] = []
        _lanes.add(self)

    def call(self, *args: Any) -> Any:
        """One command and its reply (errors from Redis raised as redis-py's)."""
        conn: Any
        try:
            conn = self._idle.pop()
        except IndexError:
            conn = self._pool.connection_class(**self._pool.connection_kwargs)
        try:
            if _pack is None:
                conn.send_command(*args)
            else:
                conn.send_packed_command([_pack(args)])
            reply = conn.read_response()
        except ResponseError:
            self._idle.append(conn)  # the reply was read in full
            raise
        except BaseException:
            conn.disconnect()
            raise
        self._idle.append(conn)
        return reply

    def close(self) -> None:
        """Close the idle connections."""
        while self._idle:
            self._idle.pop().disconnect()

    def _forget(self) -> None:
        self._idle = []  # the parent's sockets: not ours to use or close


_lanes: weakref.WeakSet[Lane] = weakref.WeakSet()


def _after_fork() -> None:
    for lane in list(_lanes):
        lane._forget()


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_after_fork)
