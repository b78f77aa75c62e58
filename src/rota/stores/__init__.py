"""Store backends, chosen by URL: ``sqlite:///path``, ``redis://host:port/db``,
``postgresql://user:pass@host:port/db``, ``mysql://user:pass@host:port/db``."""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Iterator, Sequence
from dataclasses import replace
from urllib.parse import parse_qs, parse_qsl, quote, unquote, urlencode, urlsplit, urlunsplit

from rota.errors import InvalidArgument, StoreError
from rota.stores.base import STORE_CREATORS, Store

__all__ = [
    "MissingStore",
    "OutdatedStore",
    "Store",
    "check_url",
    "open_replica",
    "open_store",
    "read_url_of",
    "redact_url",
    "replica_url",
    "require_file",
]


_FORMS = (
    "sqlite:///path, redis://host:port/db, postgresql://user@host:port/db "
    "or mysql://user@host:port/db"
)
_POSTGRES = ("postgresql", "postgres")
#: The stores that may have a read replica.
_REPLICATED = (*_POSTGRES, "mysql")
#: The schema of a PostgreSQL store whose URL names none.
_DEFAULT_SCHEMA = "rota"


class MissingStore(StoreError):
    """A store opened to read or steer what is there (``open_store``'s
    ``must_exist``) does not exist: a SQLite file that is missing or holds
    no rota tables, a PostgreSQL schema or a MySQL database without them.
    ``newest``: the schema version rota would create it at."""

    def __init__(self, message: str, newest: int) -> None:
        super().__init__(message)
        self.newest = newest


class OutdatedStore(StoreError):
    """A SQL store opened to read or steer what is there (``open_store``'s
    ``must_exist``) has tables older than this rota's: they were left as
    they are. ``tables`` names them (``the tables of schema rota at
    host:5432/db``); ``found`` is their version, ``newest`` this rota's;
    ``slow``: a sentence for each migration between that may take long on a
    big table (what it does, what waits, how to avoid it); ``url``: the
    store's URL, redacted, for the command the message names."""

    def __init__(
        self, tables: str, found: int, newest: int, slow: Sequence[str] = (), url: str = ""
    ) -> None:
        command = f"`rota migrate --url '{url}'`" if url else "`rota migrate` with the store's URL"
        super().__init__(
            f"{tables} are at version {found}, this rota needs {newest}: run {command} as a "
            f"user who may alter them, or start a worker (which migrates them); nothing was "
            f"changed"
        )
        self.tables = tables
        self.found = found
        self.newest = newest
        self.slow = tuple(slow)
        self.url = url


def open_store(url: str, *, must_exist: bool = False, wait: bool = True) -> Store:
    """Open the store a URL names, after :func:`check_url`. Backends whose
    extra is missing say what to install. A SQL store is created, or its
    tables are migrated to this rota's version, unless ``must_exist``.

    ``must_exist``: change nothing in the store, for the commands and the
    dashboard that only read or steer what is already there. A SQLite file
    that does not exist, or a SQLite file, PostgreSQL schema or MySQL
    database without rota's tables, is refused with :class:`MissingStore`
    rather than created; tables older than this rota's with
    :class:`OutdatedStore` rather than migrated (``rota migrate`` or a
    worker migrates them). ``wait=False``: fail at once on a Redis server
    that does not answer its first call rather than wait ``retry_for`` for
    it, for a command whose user is waiting for its answer."""
    try:
        return _open(url, must_exist=must_exist, wait=wait)
    except OutdatedStore as exc:
        raise OutdatedStore(
            exc.tables, exc.found, exc.newest, exc.slow, url=redact_url(url)
        ) from None


def _open(url: str, *, must_exist: bool, wait: bool) -> Store:
    scheme = check_url(url)
    if scheme not in _REPLICATED and read_url_of(url) is not None:
        raise _not_replicated(url, scheme)
    if scheme == "sqlite":
        from rota.stores.sqlite import SQLiteStore

        path, _, query = url[len("sqlite://") :].partition("?")
        if path.startswith("/"):
            path = path[1:] or ":memory:"
        options = {k: v[-1] for k, v in parse_qs(query, keep_blank_values=True).items()}
        unknown = sorted(set(options) - {"synchronous"})
        if unknown:
            raise InvalidArgument(
                f"unknown SQLite URL option(s) {', '.join(unknown)}: the only one is synchronous"
            )
        if must_exist:
            require_file(url)
        return SQLiteStore(
            path or "rota.db",
            synchronous=options.get("synchronous", "full"),
            create=not must_exist,
        )
    if scheme in _POSTGRES:
        return _open_postgres(url, create=not must_exist)
    if scheme == "mysql":
        return _open_mysql(url, create=not must_exist)
    try:
        from rota.stores.redis import RedisStore  # type: ignore[import-not-found,unused-ignore]
        from rota.stores.redis._conn import RedisOptions
    except ImportError as exc:
        if exc.name in ("redis", "rota.stores.redis"):
            raise InvalidArgument(
                "the Redis store needs the redis extra: pip install 'rota[redis]'"
            ) from None
        raise
    redis_options = RedisOptions.parse(url)
    if not wait:
        redis_options = replace(redis_options, wait_at_first=False)
    store: Store = RedisStore(redis_options)
    return store


def _open_postgres(url: str, *, replica: bool = False, create: bool = True) -> Store:
    try:
        from rota.stores.postgres import PostgresStore
    except ImportError as exc:
        if exc.name in ("psycopg", "psycopg_pool", "rota.stores.postgres"):
            raise InvalidArgument(
                "the PostgreSQL store needs the postgres extra: pip install 'rota[postgres]'"
            ) from None
        raise
    return PostgresStore.from_url(url, replica=replica, create=create)


def _open_mysql(url: str, *, replica: bool = False, create: bool = True) -> Store:
    try:
        from rota.stores.mysql import MySQLStore
    except ImportError as exc:
        if exc.name in ("MySQLdb", "rota.stores.mysql"):
            raise InvalidArgument(
                "the MySQL store needs the mysql extra: pip install 'rota[mysql]'"
            ) from None
        raise
    return MySQLStore.from_url(url, replica=replica, create=create)


def read_url_of(url: str) -> str | None:
    """The read replica URL a store URL carries in its ``read_url`` query
    option (percent-encoded there), decoded; None when it has none."""
    for name, value in parse_qsl(urlsplit(url).query, keep_blank_values=True):
        if name == "read_url":
            return value or None
    return None


def replica_url(url: str, read_url: str) -> str:
    """The URL of the read-only store on ``read_url``, a replica of the
    PostgreSQL or MySQL store ``url``: ``read_url`` with the schema (the
    database, on MySQL) of ``url`` when it names none. Refuses
    (:class:`InvalidArgument`) a ``url`` of another store, a ``read_url`` of
    another kind than ``url``, and a ``read_url`` naming another schema or
    database than ``url``."""
    scheme = check_url(url)
    if scheme not in _REPLICATED:
        raise _not_replicated(url, scheme)
    mysql = scheme == "mysql"
    kind, form = (
        ("MySQL", "mysql://user@replica-host:3306")
        if mysql
        else ("PostgreSQL", "postgresql://user@replica-host:port/db")
    )
    family = ("mysql",) if mysql else _POSTGRES
    if not isinstance(read_url, str) or read_url.partition(":")[0].lower() not in family:
        raise InvalidArgument(
            f"the read URL {redact_url(str(read_url))!r} is not a {kind} URL: it names a "
            f"replica of the store's server, {form}"
        )
    if mysql:
        place, named = "database", urlsplit(read_url).path.strip("/") or None
        expected = urlsplit(url).path.strip("/")
    else:
        place, named = "schema", _schema_of(read_url)
        expected = _schema_of(url) or _DEFAULT_SCHEMA
    if named is None:
        read_url = _with_place(read_url, mysql, expected)
    elif named != expected:
        raise InvalidArgument(
            f"the read URL names {place} {named!r} but the store is in {place} {expected!r}: "
            f"a replica shows the store's own {place}; leave the {place} out of the read URL"
        )
    check_url(read_url)
    return read_url


def _with_place(read_url: str, mysql: bool, place: str) -> str:
    """``read_url`` naming the store's database (MySQL) or schema (PostgreSQL)."""
    if mysql:
        return urlunsplit(urlsplit(read_url)._replace(path=f"/{place}"))
    return _with_option(read_url, "schema", place)


def open_replica(url: str, read_url: str) -> Store:
    """Open a read-only store on ``read_url``, a replica of the PostgreSQL
    (streaming) or MySQL store ``url`` (see :func:`replica_url`). It runs no
    migrations and every change is refused (:class:`StoreError`); what it
    shows lags the primary by the replication delay."""
    replica = replica_url(url, read_url)
    if check_url(url) == "mysql":
        return _open_mysql(replica, replica=True)
    return _open_postgres(replica, replica=True)


def _not_replicated(url: str, scheme: str) -> InvalidArgument:
    kind = "SQLite" if scheme == "sqlite" else "Redis"
    return InvalidArgument(
        f"a read URL (read_url=, ROTA_READ_URL) works only with a PostgreSQL or MySQL store, "
        f"and {redact_url(url)!r} is a {kind} store; drop the read URL"
    )


def _schema_of(url: str) -> str | None:
    """The ``schema`` option of a PostgreSQL URL, or None."""
    found = [v for k, v in parse_qsl(urlsplit(url).query, keep_blank_values=True) if k == "schema"]
    return found[-1] if found else None


def _with_option(url: str, name: str, value: str) -> str:
    parts = urlsplit(url)
    query = [*parse_qsl(parts.query, keep_blank_values=True), (name, value)]
    return urlunsplit(parts._replace(query=urlencode(query)))


def require_file(url: str) -> None:
    """Refuse (:class:`MissingStore`) a well-formed SQLite URL whose file does
    not exist; any other URL passes (a malformed one fails when opened)."""
    try:
        if check_url(url) != "sqlite":
            return
    except InvalidArgument:
        return
    path = url[len("sqlite:///") :].partition("?")[0]
    if path != ":memory:" and not os.path.isfile(path):
        from rota.stores.sql.queries import newest_migration

        raise MissingStore(
            f"no SQLite store at {os.path.abspath(path)} (from {url}): check --url, "
            f"ROTA_URL or the current directory; {STORE_CREATORS}",
            newest_migration("rota.stores.sqlite"),
        )


def check_url(url: str) -> str:
    """Refuse a store URL that is malformed, with what to write instead
    (:class:`InvalidArgument`); return its scheme (``sqlite``, ``redis``,
    ``rediss``, ``unix``, ``postgresql``, ``postgres`` or ``mysql``)."""
    if not isinstance(url, str) or not url.strip():
        raise InvalidArgument(f"the store URL is empty: use {_FORMS}")
    scheme, sep, rest = url.partition(":")
    scheme = scheme.lower()
    shown = redact_url(url)
    if not sep:
        raise InvalidArgument(f"store URL {shown!r} has no scheme: use {_FORMS}")
    if scheme not in ("sqlite", "redis", "rediss", "unix", "postgresql", "postgres", "mysql"):
        raise InvalidArgument(f"unsupported store URL scheme {scheme!r}: use {_FORMS}")
    if scheme == "sqlite":
        _check_sqlite(url, rest)
    elif scheme in _POSTGRES:
        _check_postgres(url, scheme, shown)
    elif scheme == "mysql":
        _check_mysql(url, shown)
    else:
        _check_redis(url, scheme, shown)
    return scheme


def _check_sqlite(url: str, rest: str) -> None:
    path = rest.partition("?")[0]
    hint = "sqlite:///rota.db for a relative path, sqlite:////abs/path for an absolute one"
    if not path.startswith("//"):
        raise InvalidArgument(f"SQLite URL {url!r} needs three slashes after 'sqlite:': {hint}")
    if path[2:] and not path[2:].startswith("/"):
        raise InvalidArgument(f"SQLite URL {url!r} names a host, not a file: {hint}")
    if path in ("//", "///"):
        raise InvalidArgument(f"SQLite URL {url!r} names no file: {hint}")


def _check_postgres(url: str, scheme: str, shown: str) -> None:
    parts = urlsplit(url)
    if not url[len(scheme) + 1 :].startswith("//"):
        raise InvalidArgument(
            f"PostgreSQL URL {shown!r} needs '//' after '{scheme}:': use {_FORMS}"
        )
    try:
        parts.port  # noqa: B018  (raises ValueError when it is not a port)
    except ValueError:
        raise InvalidArgument(
            f"PostgreSQL URL {shown!r} has a bad port: use a number from 1 to 65535"
        ) from None


def _check_mysql(url: str, shown: str) -> None:
    parts = urlsplit(url)
    form = "mysql://user@host:3306/database"
    if not url[len("mysql:") :].startswith("//"):
        raise InvalidArgument(f"MySQL URL {shown!r} needs '//' after 'mysql:': use {form}")
    try:
        parts.port  # noqa: B018  (raises ValueError when it is not a port)
    except ValueError:
        raise InvalidArgument(
            f"MySQL URL {shown!r} has a bad port: use a number from 1 to 65535"
        ) from None
    if not parts.path.strip("/"):
        raise InvalidArgument(f"MySQL URL {shown!r} names no database: use {form}")


def _check_redis(url: str, scheme: str, shown: str) -> None:
    parts = urlsplit(url)
    if not url[len(scheme) + 1 :].startswith("//"):
        raise InvalidArgument(f"Redis URL {shown!r} needs '//' after '{scheme}:': use {_FORMS}")
    if scheme == "unix":
        if not parts.path:
            raise InvalidArgument(
                f"Redis URL {shown!r} names no socket: use unix:///path/to/redis.sock"
            )
        return
    try:
        parts.port  # noqa: B018  (raises ValueError when it is not a port)
    except ValueError:
        port = parts.netloc.rpartition("@")[2].rpartition(":")[2]
        raise InvalidArgument(
            f"Redis URL {shown!r} has a bad port {port!r}: use a number from 1 to 65535"
        ) from None
    if parts.port == 0:
        raise InvalidArgument(f"Redis URL {shown!r} has port 0: use a number from 1 to 65535")
    database = parts.path.strip("/")
    if database and not database.isdigit():
        raise InvalidArgument(
            f"Redis URL {shown!r} names database {database!r}: a database is a number (/0)"
        )


#: Query options whose value is a secret (compared without case, ``-`` and ``_``).
_SECRET_OPTIONS = frozenset(
    {"password", "passwd", "pass", "pwd", "token", "secret", "sslpassword", "authtoken",
     "accesstoken", "apikey", "credentials"}
)  # fmt: skip


def _is_secret(name: str) -> bool:
    plain = unquote(name).lower().replace("_", "").replace("-", "")
    return plain in _SECRET_OPTIONS or plain.endswith(("password", "secret", "token"))


def redact_url(url: str) -> str:
    """The URL with every secret it carries replaced by ``***``, safe to print:
    the password of its user part, and the value of query options such as
    ``password``, ``passwd``, ``token``, ``secret`` or ``sslpassword``."""
    parts = urlsplit(url)
    user, at, host = parts.netloc.rpartition("@")
    if at and ":" in user:
        url = url.replace(parts.netloc, f"{user.partition(':')[0]}:***@{host}", 1)
    head, mark, rest = url.partition("?")
    if not mark:
        return url
    query, hash_, fragment = rest.partition("#")
    query = "&".join(
        f"{name}{sep}{_redact_option(name, value) if sep else value}"
        for name, sep, value in (item.partition("=") for item in query.split("&"))
    )
    return f"{head}?{query}{hash_}{fragment}"


def _redact_option(name: str, value: str) -> str:
    if _is_secret(name):
        return "***"
    if unquote(name) == "read_url":  # a whole URL, with its own secrets
        return quote(redact_url(unquote(value)), safe=":/@*")
    return value


#: A PostgreSQL SSLRequest: a PostgreSQL server answers it with one byte, S or N.
_SSL_REQUEST = b"\x00\x00\x00\x08\x04\xd2\x16\x2f"


def server_protocol(host: str, port: int, wait: float = 0.5) -> str | None:
    """The protocol the server at ``host``:``port`` speaks, told by one short
    exchange on a new connection: ``"MySQL"`` (it greets first, with a
    MySQL handshake or error packet), ``"PostgreSQL"`` (it answers an SSL
    request with ``S`` or ``N``) or ``"Redis"`` (it answers an inline
    command with a ``+`` or ``-`` reply); None when that cannot be told (no
    connection, no answer within ``wait`` seconds, any other answer). For
    the error of a store URL that reaches another kind of server: a store
    calls it only once its own connection failed in a way a server of the
    wrong kind causes."""
    with _connected(host, port, wait) as sock:
        greeting = _receive(sock, wait)
        if greeting:
            return "MySQL" if len(greeting) > 4 and greeting[4] in (10, 0xFF) else None
        if _receive(sock, wait, _SSL_REQUEST)[:1] in (b"S", b"N"):
            return "PostgreSQL"
    # (on a connection of its own: Redis reads no line past the request's zero bytes)
    with _connected(host, port, wait) as sock:
        return "Redis" if _receive(sock, wait, b"PING\r\n")[:1] in (b"+", b"-") else None


@contextlib.contextmanager
def _connected(host: str, port: int, wait: float) -> Iterator[socket.socket | None]:
    """A new connection to ``host``:``port``, closed when the block ends;
    None when it cannot be made within ``wait`` seconds."""
    try:
        sock = socket.create_connection((host, port), timeout=wait)
    except OSError:
        yield None
        return
    with sock:
        yield sock


def _receive(sock: socket.socket | None, wait: float, send: bytes = b"") -> bytes:
    """What ``sock`` receives within ``wait`` seconds after sending ``send``;
    empty when nothing (or there is no connection, or it failed or closed)."""
    if sock is None:
        return b""
    try:
        if send:
            sock.sendall(send)
        sock.settimeout(wait)
        return sock.recv(64)
    except OSError:
        return b""
