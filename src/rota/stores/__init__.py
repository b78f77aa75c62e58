"""Store backends, chosen by URL: ``sqlite:///path``, ``redis://host:port/db``."""

from __future__ import annotations

from urllib.parse import parse_qs, unquote, urlsplit

from rota.errors import InvalidArgument
from rota.stores.base import Store

__all__ = ["Store", "open_store", "redact_url"]


def open_store(url: str) -> Store:
    """Open the store a URL names. Backends whose extra is missing say what to install."""
    scheme = urlsplit(url).scheme
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
        return SQLiteStore(path or "rota.db", **options)
    if scheme in ("redis", "rediss", "unix"):
        try:
            from rota.stores.redis import RedisStore  # type: ignore[import-not-found,unused-ignore]
        except ImportError as exc:
            if exc.name in ("redis", "rota.stores.redis"):
                raise InvalidArgument(
                    "the Redis store needs the redis extra: pip install 'rota[redis]'"
                ) from None
            raise
        store: Store = RedisStore.from_url(url)
        return store
    raise InvalidArgument(
        f"unsupported store URL scheme {scheme!r}: use sqlite:///path or redis://host:port/db"
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
        f"{name}=***" if sep and _is_secret(name) else f"{name}{sep}{value}"
        for name, sep, value in (item.partition("=") for item in query.split("&"))
    )
    return f"{head}?{query}{hash_}{fragment}"
