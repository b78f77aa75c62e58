"""Writes to a store that bypass its verbs: values rota never writes, as a
damaged store, another program or an older client might leave them. Only
for tests of how a store copes with them."""

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
