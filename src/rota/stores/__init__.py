"""Store backends, chosen by URL: ``sqlite:///path``, ``redis://host:port/db``."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

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
        options = {k: v[-1] for k, v in parse_qs(query).items()}
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


def redact_url(url: str) -> str:
    """The URL with any password replaced by ``***``, safe to print."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return parts._replace(netloc=netloc).geturl()
