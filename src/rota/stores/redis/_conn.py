"""Connections to Redis: URL options, the server check on first use, reconnect
with backoff within a time budget, one log line per outage."""

from __future__ import annotations

import difflib
import inspect
import logging
import os
import socket
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import parse_qsl, urlencode, urlsplit

import redis
from redis.backoff import NoBackoff
from redis.connection import DefaultParser
from redis.exceptions import AuthenticationError, ResponseError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from redis.retry import Retry
from redis.utils import SENTINEL

from rota.errors import InvalidArgument, StoreError, StoreUnavailable
from rota.stores.base import SERVICE_NOTICE
from rota.stores.redis.keys import check_namespace

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
    (``namespace``, ``retry_for``, ``allow_eviction``) and the URL redis-py opens.

    ``wait_at_first``: whether the first call waits ``retry_for`` for a
    server that has not answered yet (a worker started before Redis) or
    fails at its first refusal (a one-shot command on a mistyped URL)."""

    url: str
    namespace: str = "default"
    retry_for: float = 30.0
    allow_eviction: bool = False
    wait_at_first: bool = True

    @classmethod
    def parse(cls, url: str) -> RedisOptions:
        """Read ``namespace=`` (default ``"default"``), ``retry_for=`` (seconds
        a call keeps retrying through an outage, default 30) and
        ``allow_eviction=1`` (accept a server whose ``maxmemory-policy`` evicts
        keys) from the query string; every other query option goes to redis-py,
        which must know it (:class:`InvalidArgument` names one it does not)."""
        parts = urlsplit(url)
        if parts.scheme not in ("redis", "rediss", "unix"):
            raise InvalidArgument(f"not a Redis URL: scheme {parts.scheme!r}")
        known = _redis_py_options(parts.scheme)
        rest: list[tuple[str, str]] = []
        namespace, retry_for, allow_eviction = "default", 30.0, False
        for key, value in parse_qsl(parts.query, keep_blank_values=True):
            if key == "namespace":
                namespace = value
            elif key == "retry_for":
                try:
                    retry_for = float(value)
                except ValueError:
                    raise InvalidArgument(f"retry_for must be seconds, not {value!r}") from None
                if not 0 <= retry_for < 1e9:  # also refuses nan
                    raise InvalidArgument(f"retry_for must be seconds >= 0, not {value!r}")
            elif key == "allow_eviction":
                allow_eviction = _flag(key, value)
            elif key in known:
                rest.append((key, value))
            else:
                raise InvalidArgument(_unknown_option(key, known))
        check_namespace(namespace)
        # not urlunsplit: it would drop the // of unix:///path, which redis-py needs
        base = url.split("?", 1)[0].split("#", 1)[0]
        plain = f"{base}?{urlencode(rest)}" if rest else base
        return cls(plain, namespace, retry_for, allow_eviction)


#: The query options rota reads itself from a Redis URL.
ROTA_OPTIONS = ("namespace", "retry_for", "allow_eviction")


def _redis_py_options(scheme: str) -> frozenset[str]:
    """The query options redis-py takes in a URL of ``scheme``: the
    keyword arguments of its connection pool and of the connection class
    the scheme opens (redis-py passes any other to that class, which fails
    with a TypeError on first use)."""
    connection: type = {
        "redis": redis.Connection,
        "rediss": redis.SSLConnection,
        "unix": redis.UnixDomainSocketConnection,
    }[scheme]
    names: set[str] = set()
    for cls in (redis.ConnectionPool, *connection.__mro__):
        init = cls.__dict__.get("__init__")
        if init is not None:
            names.update(
                p.name
                for p in inspect.signature(init).parameters.values()
                if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.name != "self"
            )
    return frozenset(names)


def _unknown_option(key: str, known: frozenset[str]) -> str:
    close = difflib.get_close_matches(key, [*ROTA_OPTIONS, *known], n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    # the options redis-py reads from URLs, then those a URL sets as text
    usual = set(getattr(redis.connection, "URL_QUERY_ARGUMENT_PARSERS", ()))
    usual |= {"client_name", "username", "password"} | {k for k in known if k.startswith("ssl_")}
    return (
        f"unknown Redis URL option {key!r}{hint}: rota reads {', '.join(ROTA_OPTIONS)}; "
        f"redis-py reads {', '.join(sorted(usual & known))} and the other keyword "
        f"arguments of its connection"
    )


def _flag(name: str, value: str) -> bool:
    if value.lower() in ("1", "true", "yes", "on"):
        return True
    if value.lower() in ("0", "false", "no", "off", ""):
        return False
    raise InvalidArgument(f"{name} must be 1 or 0 (true or false), not {value!r}")


class _Outage:
    """Shared by every connection of one store: whether an outage is going on.

    An outage begins at the first failed attempt and ends at the first
    operation that succeeds having started after that failure (replies to a
    connection's handshake do not count: a restarted Redis accepts
    connections while it still answers ``LOADING``). Each is logged once
    when it begins and once when it ends, whichever threads see it.
    """

    def __init__(self, where: str, budget: float = 30.0) -> None:
        self.where = where
        self.budget = budget
        self.since: float | None = None
        #: Whether any operation ever got its answer: before that, a failure
        #: is not a lost connection but a server that cannot be reached.
        self.reached = False
        self._lock = threading.Lock()

    def failed(self, error: Exception) -> None:
        """Note a failure; log the first of an outage."""
        with self._lock:
            if self.since is None:
                self.since = time.monotonic()
                if self.reached:
                    log.warning(
                        "lost the connection to Redis at %s (%s); reconnecting", self.where, error
                    )
                else:
                    log.warning(
                        "cannot reach Redis at %s: %s; retrying for up to %g s",
                        self.where,
                        str(error).rstrip("."),
                        self.budget,
                    )

    def succeeded(self, started: float) -> None:
        """Note an operation that got its answer, attempted at ``started``."""
        with self._lock:
            if self.since is None or started < self.since:
                return  # no outage, or an attempt older than its first failure
            log.warning(
                "reconnected to Redis at %s after %.1f s", self.where, time.monotonic() - self.since
            )
            self.since = None


class _Budget(threading.local):
    """This thread's current store call: when it gives up waiting for Redis
    (``deadline``, monotonic; ``None`` outside a call), its budget, and
    whether a command of it was written whole to a connection (``sent``)."""

    deadline: float | None = None
    budget: float = 0.0
    sent: bool = False


_call = _Budget()

_RETRIED = (RedisConnectionError, RedisTimeoutError, socket.timeout)


class Reconnect:
    """Runs store operations through outages: repeated after connection
    errors and timeouts, with exponential backoff (25 ms doubling to 1 s),
    until the operation returns or Redis has not answered for ``budget``
    seconds, then :class:`StoreUnavailable`. Waiting for replies counts: the
    reads of a call are cut at its deadline (see :func:`answer_parser`), so a
    server that accepts connections but never answers fails a call after
    ``budget`` seconds too (plus a connect timeout at most). Every answered
    operation of the call moves its deadline to ``budget`` seconds later, and
    blocking waits add their block (:meth:`Lane.call`).

    It wraps whole store operations rather than living inside redis-py's
    clients, because redis-py takes a pooled connection outside its own
    retry loop; the clients themselves do not retry. ``check`` runs (through
    outages too) before the first operation, until it passes. Without
    ``wait_at_first``, a server that has never answered is not waited for:
    its first refusal raises.
    """

    def __init__(
        self,
        budget: float,
        outage: _Outage,
        check: Callable[[], None] | None = None,
        wait_at_first: bool = True,
    ) -> None:
        self.budget = budget
        self.wait_at_first = wait_at_first
        self.outage = outage
        self._check = check
        self._check_lock = threading.Lock()

    def call(self, operation: Callable[[], T]) -> T:
        """``operation()``, repeated after connection failures until it returns."""
        if self._check is not None:
            self._first_use()
        return self.call_unchecked(operation)

    def _attempts(self, operation: Callable[[], T]) -> T:
        delay = 0.025
        while True:
            started = time.monotonic()
            try:
                result = operation()
            except AuthenticationError as error:  # (a ConnectionError that no retry helps)
                raise StoreError(
                    f"the Redis server at {self.outage.where} refused the connection: {error}"
                ) from error
            except _RETRIED as error:
                waits = self.outage.reached or self.wait_at_first
                if waits:
                    self.outage.failed(error)
                left = (_call.deadline or 0.0) - time.monotonic()
                if left <= 0 or not waits:
                    raise StoreUnavailable(
                        f"the Redis store at {self.outage.where} is unreachable: {error}"
                    ) from error
                time.sleep(min(delay, left))
                delay = min(delay * 2, 1.0)
                continue
            _call.deadline = time.monotonic() + self.budget
            if self.outage.since is not None:
                self.outage.succeeded(started)
            self.outage.reached = True
            return result

    def _first_use(self) -> None:
        with self._check_lock:
            check = self._check
            if check is not None:
                self.call_unchecked(check)
                self._check = None

    def call_unchecked(self, operation: Callable[[], T]) -> T:
        """:meth:`call` without the first-use check."""
        if _call.deadline is not None:  # within another operation of this thread
            return self._attempts(operation)
        _call.deadline, _call.budget = time.monotonic() + self.budget, self.budget
        _call.sent = False
        try:
            return self._attempts(operation)
        finally:
            _call.deadline = None


def request_sent() -> bool:
    """Whether this thread's latest store call (:meth:`Reconnect.call`) wrote
    a command whole to a connection, so that Redis may have run it although
    the call failed. False when every attempt failed before that (connection
    refused, handshake cut): the server never saw the command. True is not
    proof that it did: a connection the server had already dropped takes a
    write too, and the server never reads it."""
    return _call.sent


def _allowance(default: float | None) -> float | None:
    """How long this thread's call may still wait for a reply."""
    deadline = _call.deadline
    if deadline is None:
        return default
    left = max(0.001, deadline - time.monotonic())
    return left if default is None else min(default, left)


_PARSER: Any = DefaultParser  # redis-py's choice: hiredis when installed


def answer_parser() -> type:
    """redis-py's reply parser, waiting for a reply no longer than the
    current call allows (:class:`Reconnect`) nor than the socket timeout."""

    class AnswerParser(_PARSER):  # type: ignore[misc]
        def on_connect(self, connection: Any, **kwargs: Any) -> None:
            super().on_connect(connection, **kwargs)
            self._rota_timeout = connection.socket_timeout

        def read_response(self, *args: Any, **kwargs: Any) -> Any:
            if kwargs.get("timeout", SENTINEL) is SENTINEL and _call.deadline is not None:
                kwargs["timeout"] = _allowance(self._rota_timeout)
            return super().read_response(*args, **kwargs)

    return AnswerParser


def clients(options: RedisOptions, where: str) -> tuple[redis.Redis, redis.Redis, Reconnect]:
    """The command client, the client for blocking waits (its own pool, and a
    socket timeout above the longest block), and their :class:`Reconnect`,
    which checks the server (:func:`check_server`) on first use."""
    common: dict[str, Any] = {
        "retry": Retry(NoBackoff(), 0),
        "parser_class": answer_parser(),
        "socket_connect_timeout": min(5.0, max(options.retry_for, 0.1)),
        "socket_keepalive": True,
        "health_check_interval": 30,
    }
    try:
        main = redis.Redis.from_url(options.url, socket_timeout=15.0, **common)
        blocking = redis.Redis.from_url(options.url, socket_timeout=MAX_BLOCK + 10.0, **common)
    except ValueError as exc:  # redis-py's reading of an option's value
        raise InvalidArgument(f"Redis URL {where}: {exc}") from None

    def check() -> None:
        check_server(main, where, allow_eviction=options.allow_eviction)

    outage = _Outage(where, options.retry_for)
    return main, blocking, Reconnect(options.retry_for, outage, check, options.wait_at_first)


_warned: set[str] = set()  # servers whose missing persistence this process logged


#: The oldest Redis rota runs on: its scripts are a Redis Functions library.
MIN_REDIS = (7, 0)


def too_old(version: str) -> bool:
    """Whether a server reporting ``redis_version`` ``version`` predates
    :data:`MIN_REDIS` (an unreadable version is not refused here)."""
    try:
        found = tuple(int(part) for part in version.split(".")[:2])
    except ValueError:
        return False
    return found < MIN_REDIS


def check_server(client: redis.Redis, where: str, *, allow_eviction: bool = False) -> None:
    """Refuse, raising :class:`StoreError`, a server older than
    :data:`MIN_REDIS`, and one that evicts keys under memory pressure (any
    ``maxmemory-policy`` but ``noeviction``: rota's keys include some with a
    TTL, so ``volatile-*`` policies drop them too) unless ``allow_eviction``;
    log once per process and server when it keeps
    neither an append-only file nor RDB snapshots. Reads ``CONFIG GET``, or
    ``INFO`` where CONFIG is disabled (managed services)."""
    try:
        version = str(client.info("server").get("redis_version", ""))
    except ResponseError as exc:
        if "DB index is out of range" not in str(exc):
            raise
        db = client.connection_pool.connection_kwargs.get("db", 0)
        raise StoreError(
            f"the Redis server at {where} has no database {db} (DB index is out of range): "
            "a server has databases 0 to 15 unless its 'databases' setting says otherwise"
        ) from None
    if too_old(version):
        raise StoreError(
            f"the Redis server at {where} runs Redis {version}; rota needs Redis "
            f"{'.'.join(map(str, MIN_REDIS))} or later (its scripts are a Redis Functions library)"
        )
    try:
        config = client.config_get("maxmemory-policy")
        config |= client.config_get("appendonly")
        config |= client.config_get("save")
        policy = str(config.get("maxmemory-policy", "noeviction"))
        aof = config.get("appendonly") == "yes"
        rdb = bool(str(config.get("save", "")).strip())
    except ResponseError:  # CONFIG disabled or renamed
        policy = str(client.info("memory").get("maxmemory_policy", "noeviction"))
        persistence = client.info("persistence")
        aof = persistence.get("aof_enabled") == 1
        rdb = int(persistence.get("rdb_saves", 0)) > 0  # save points unknown: snapshots seen
    if policy != "noeviction" and not allow_eviction:
        raise StoreError(
            f"the Redis server at {where} evicts keys when full (maxmemory-policy {policy}), "
            "which would drop jobs silently: set maxmemory-policy noeviction, or add "
            "allow_eviction=1 to the store URL to accept that risk"
        )
    if not (aof or rdb) and where not in _warned:
        _warned.add(where)
        log.warning(
            "the Redis server at %s keeps no append-only file and no RDB snapshots: a restart "
            "loses every job (sent or running), schedule and result it holds; enable "
            "appendonly yes",
            where,
            extra={SERVICE_NOTICE: True},
        )


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

    def call(self, *args: Any, block: float | None = None) -> Any:
        """One command and its reply (errors from Redis raised as redis-py's).
        ``block``: the command may wait that many seconds before answering."""
        conn: Any
        try:
            conn = self._idle.pop()
        except IndexError:
            conn = self._open()
        try:
            if _pack is None:
                conn.send_command(*args)
            else:
                conn.send_packed_command([_pack(args)])
            _call.sent = True
            reply = conn.read_response() if block is None else self._blocked_reply(conn, block)
        except ResponseError:
            self._idle.append(conn)  # the reply was read in full
            raise
        except BaseException:
            conn.disconnect()
            raise
        self._idle.append(conn)
        if _call.deadline is not None:  # answered: the call's wait starts again
            _call.deadline = time.monotonic() + _call.budget
        return reply

    def close(self) -> None:
        """Close the idle connections."""
        while self._idle:
            self._idle.pop().disconnect()

    def _forget(self) -> None:
        self._idle = []  # the parent's sockets: not ours to use or close

    def _open(self) -> Any:
        """A new connection (it connects on its first command)."""
        return self._pool.connection_class(**self._pool.connection_kwargs)

    def _blocked_reply(self, conn: Any, block: float) -> Any:
        """The reply of a command that may wait ``block`` seconds to answer."""
        if _call.deadline is None:
            return conn.read_response()
        return conn.read_response(timeout=block + max(_call.budget, 1.0))


class WaitLane(Lane):
    """The lane of blocking pops, whose waits :meth:`interrupt` ends early.

    Each of its connections learns its client id on the server as it
    connects (``CLIENT ID``), so the lane knows which clients are blocked
    while they wait; a ``CLIENT UNBLOCK`` of one makes its pop answer as if
    it had timed out. A wait that reached the server after the unblock, or
    whose server refuses those commands, runs its course; a waiter that
    noted :attr:`interrupts` as it began sees that they changed
    (:meth:`interrupted`) and does not block again."""

    def __init__(self, client: redis.Redis) -> None:
        super().__init__(client)
        self._blocked: set[int] = set()  # server-side ids of the clients blocked now
        #: :meth:`interrupt` calls so far.
        self.interrupts = 0

    def interrupted(self, since: int) -> bool:
        """Whether :meth:`interrupt` was called since :attr:`interrupts` read ``since``."""
        return self.interrupts != since

    def interrupt(self, client: redis.Redis) -> None:
        """End, through ``client``, the blocking calls under way now. Where
        the server refuses ``CLIENT UNBLOCK`` (an ACL without it) or does not
        answer, they run to their timeouts."""
        self.interrupts += 1
        for blocked in list(self._blocked):
            try:
                client.client_unblock(blocked)
            except redis.RedisError as exc:  # refused, or the server gone: the wait ends anyway
                log.debug("could not end a wait early: %s", exc)

    def _forget(self) -> None:
        super()._forget()
        self._blocked = set()  # the parent's waits: not ours to end

    def _open(self) -> Any:
        conn = super()._open()
        conn.register_connect_callback(self._connected)
        return conn

    def _connected(self, conn: Any) -> None:
        """At each connect of ``conn`` (redis-py calls this once its handshake
        is done): its client id on the server, None where an ACL refuses it."""
        conn.send_command("CLIENT", "ID", check_health=False)
        try:
            conn.rota_client_id = int(conn.read_response())
        except ResponseError:
            conn.rota_client_id = None

    def _blocked_reply(self, conn: Any, block: float) -> Any:
        blocked: int | None = getattr(conn, "rota_client_id", None)
        if blocked is None:
            return super()._blocked_reply(conn, block)
        self._blocked.add(blocked)
        try:
            return super()._blocked_reply(conn, block)
        finally:
            self._blocked.discard(blocked)


_lanes: weakref.WeakSet[Lane] = weakref.WeakSet()


def _after_fork() -> None:
    for lane in list(_lanes):
        lane._forget()


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_after_fork)
