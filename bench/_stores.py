"""Fresh store URLs for benchmark runs, and their cleanup afterwards."""

from __future__ import annotations

import uuid
from pathlib import Path


def fresh_url(base: str) -> str:
    """A store URL no earlier run has touched: a new SQLite file, or a new Redis namespace."""
    tag = uuid.uuid4().hex[:8]
    if base.startswith("sqlite:///"):
        path = Path(base[len("sqlite:///") :])
        return f"sqlite:///{path.with_name(f'{path.stem}-{tag}{path.suffix}')}"
    sep = "&" if "?" in base else "?"
    return f"{base}{sep}namespace=bench-{tag}"


def drop(url: str) -> None:
    """Remove what a run left: the SQLite files, or the Redis namespace's keys."""
    if url.startswith("sqlite:///"):
        for suffix in ("", "-wal", "-shm"):
            Path(url[len("sqlite:///") :] + suffix).unlink(missing_ok=True)
        return
    import redis

    namespace = url.rsplit("namespace=", 1)[1]
    client = redis.Redis.from_url(url.split("?", 1)[0])
    batch: list[bytes] = []
    for key in client.scan_iter(match=f"{{rota:{namespace}}}:*", count=5000):
        batch.append(key)
        if len(batch) >= 5000:
            client.unlink(*batch)
            batch = []
    if batch:
        client.unlink(*batch)
    client.close()
