"""Reads and writes that bypass a store's verbs: values rota never writes,
as a damaged store, another program or an older client might leave them, and
state no verb shows. Only for tests of how a store copes with them and of
what it keeps."""

from __future__ import annotations

import math
import sqlite3
from typing import Any

from rota.stores import Store


def pg_execute(store: Store, sql: str, params: tuple[Any, ...] = ()) -> None:
    """Run one statement on a PostgreSQL store's own connections (its schema)."""
    pool: Any = store._pool  # type: ignore[attr-defined]
    with pool.connection() as conn:
        conn.execute(sql, params)


def mysql_run(store: Store, sql: str, params: tuple[Any, ...] = ()) -> None:
    """Run one statement on a MySQL store's own connections (its database)."""
    with store._connection() as conn:  # type: ignore[attr-defined]
        conn.cursor().execute(sql, params)


def set_lease(store: Store, job_id: str, value: str) -> None:
    """Overwrite a stored job's lease duration with ``value`` as text (on
    PostgreSQL, whose column holds numbers only, as the number it reads as;
    on MySQL, whose numbers are all finite, a NaN or an infinity as 0)."""
    if store.kind == "sqlite":
        path: str = store.path  # type: ignore[attr-defined]
        with sqlite3.connect(path) as conn:
            conn.execute("UPDATE jobs SET lease = ? WHERE id = ?", (value, job_id))
    elif store.kind == "redis":
        client: Any = store._client  # type: ignore[attr-defined]
        client.hset(store.keys.job(job_id), "lease", value)  # type: ignore[attr-defined]
    elif store.kind == "postgres":
        pg_execute(
            store, "UPDATE jobs SET lease = %s::double precision WHERE id = %s", (value, job_id)
        )
    elif store.kind == "mysql":
        number = float(value)
        mysql_run(
            store,
            "UPDATE jobs SET lease = %s WHERE id = %s",
            (number if math.isfinite(number) else 0.0, job_id),
        )
    else:
        raise ValueError(f"no raw writer for {store.kind}")


def _sql_rows(store: Store, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """The rows of one query on a SQL store, in the dialect's own placeholders
    (``?`` on SQLite, ``%s`` on the servers)."""
    if store.kind == "sqlite":
        path: str = store.path  # type: ignore[attr-defined]
        with sqlite3.connect(path) as conn:
            return list(conn.execute(sql.replace("%s", "?"), params))
    if store.kind == "postgres":
        pool: Any = store._pool  # type: ignore[attr-defined]
        with pool.connection() as conn:
            return list(conn.execute(sql, params).fetchall())
    if store.kind == "mysql":
        with store._connection() as conn:  # type: ignore[attr-defined]
            cursor = conn.cursor()
            cursor.execute(sql, params)
            return list(cursor.fetchall())
    raise ValueError(f"no raw reader for {store.kind}")


def fair_keys(store: Store, queue: str) -> set[str]:
    """The fairness keys the store keeps a last virtual time for on ``queue``."""
    if store.kind == "redis":
        client: Any = store._client  # type: ignore[attr-defined]
        return {k.decode() for k in client.hkeys(store.keys.fair(queue))}  # type: ignore[attr-defined]
    column = "`key`" if store.kind == "mysql" else "key"
    rows = _sql_rows(store, f"SELECT {column} FROM fair_keys WHERE queue = %s", (queue,))
    return {row[0] for row in rows}


def hosts_seen(store: Store, queue: str) -> set[str]:
    """The hosts the store keeps a last sighting of on ``queue``."""
    if store.kind == "redis":
        client: Any = store._client  # type: ignore[attr-defined]
        return {h.decode() for h in client.hkeys(store.keys.hosts(queue))}  # type: ignore[attr-defined]
    rows = _sql_rows(store, "SELECT host FROM hosts WHERE queue = %s", (queue,))
    return {row[0] for row in rows}


def age_host(store: Store, host: str, queue: str, seconds: float) -> None:
    """Move the last sighting of ``host`` on ``queue`` back by ``seconds``."""
    if store.kind == "redis":
        client: Any = store._client  # type: ignore[attr-defined]
        client.hincrbyfloat(store.keys.hosts(queue), host, -seconds)  # type: ignore[attr-defined]
        return
    sql = "UPDATE hosts SET seen_at = seen_at - %s WHERE host = %s AND queue = %s"
    if store.kind == "sqlite":
        path: str = store.path  # type: ignore[attr-defined]
        with sqlite3.connect(path) as conn:
            conn.execute(sql.replace("%s", "?"), (seconds, host, queue))
    elif store.kind == "postgres":
        pg_execute(store, sql, (seconds, host, queue))
    else:
        mysql_run(store, sql, (seconds, host, queue))
