"""Fresh store URLs for benchmark runs, and their cleanup afterwards."""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path
from urllib.parse import urlsplit


def fresh_url(base: str) -> str:
    """A store URL no earlier run has touched: a new SQLite file, a new
    PostgreSQL schema, a new MySQL database, or a new Redis namespace."""
    tag = uuid.uuid4().hex[:8]
    if base.startswith("sqlite:///"):
        path = Path(base[len("sqlite:///") :])
        return f"sqlite:///{path.with_name(f'{path.stem}-{tag}{path.suffix}')}"
    sep = "&" if "?" in base else "?"
    if base.startswith("mysql://"):  # a new database, which the store creates
        head, _, query = base.partition("?")
        server = head.rsplit("/", 1)[0]
        return f"{server}/rota_bench_{tag}" + (f"?{query}" if query else "")
    if base.startswith(("postgresql://", "postgres://")):
        return f"{base}{sep}schema=bench_{tag}"
    return f"{base}{sep}namespace=bench-{tag}"


def drop(url: str) -> None:
    """Remove what a run left: the SQLite files, the PostgreSQL schema, the
    MySQL database, or the Redis namespace's keys."""
    if url.startswith("sqlite:///"):
        from rota.stores.sqlite._wakeups import wake_directory

        path = url[len("sqlite:///") :]
        for suffix in ("", "-wal", "-shm"):
            Path(path + suffix).unlink(missing_ok=True)
        # its wake-up sockets and writers' lock: beside it, or for a long
        # path in the system's temporary directory
        shutil.rmtree(wake_directory(path), ignore_errors=True)
        return
    if url.startswith("mysql://"):
        import MySQLdb

        parts = urlsplit(url)
        conn = MySQLdb.connect(host=parts.hostname, port=parts.port or 3306, user=parts.username)
        conn.cursor().execute(f"DROP DATABASE IF EXISTS {parts.path.strip('/')}")
        conn.close()  # type: ignore[no-untyped-call]
        return
    if url.startswith(("postgresql://", "postgres://")):
        import psycopg
        from psycopg import sql

        schema = url.rsplit("schema=", 1)[1]
        with psycopg.connect(url.split("?", 1)[0], autocommit=True) as pg:
            pg.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))
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


def redis_cpu_seconds(url: str) -> float:
    """CPU time (user + system) the Redis server at ``url`` has used so far,
    from ``INFO cpu`` (rota's own URL options are left out of the connection)."""
    import redis

    client = redis.Redis.from_url(url.split("?", 1)[0])
    try:
        cpu = client.info("cpu")
    finally:
        client.close()
    return float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"])
