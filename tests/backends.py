"""Store URLs for tests: each test gets its own SQLite file, Redis namespace,
PostgreSQL schema or MySQL database.

A backend whose service is missing skips locally and fails in CI (``CI=true``).
"""

from __future__ import annotations

import importlib.util
import os
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest

REDIS_URL = os.environ.get("ROTA_TEST_REDIS", "redis://127.0.0.1:6379/0")
POSTGRES_URL = os.environ.get("ROTA_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/postgres")
#: A MySQL or MariaDB server (no database: each test creates its own).
MYSQL_URL = os.environ.get("ROTA_TEST_MYSQL", "mysql://root@127.0.0.1:3306")
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def _installed(module: str) -> bool:
    """Whether ``module`` can be imported; in CI every driver must be, so a
    backend whose driver is missing stays listed there and its tests fail
    on the import instead of leaving the run without a word."""
    return IN_CI or importlib.util.find_spec(module) is not None


def available_backends() -> list[str]:
    """Backends the conformance suite runs against."""
    kinds = ["sqlite"]
    if _installed("redis"):
        kinds.append("redis")
    if _installed("psycopg"):
        kinds.append("postgres")
    return kinds


def redis_reachable() -> bool:
    try:
        import redis
    except ImportError:
        return False
    try:
        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=1).ping()
    except Exception:
        return False
    return True


def postgres_reachable() -> bool:
    try:
        import psycopg
    except ImportError:
        return False
    try:
        psycopg.connect(POSTGRES_URL, connect_timeout=2).close()
    except Exception:
        return False
    return True


def mysql_backends() -> list[str]:
    """``["mysql"]`` when the MySQL driver is installed: the conformance
    suite runs on it, and the integration tests that
    ``tests/integration/test_mysql_*.py`` collect again."""
    return ["mysql"] if _installed("MySQLdb") else []


@pytest.fixture(name="backend", params=mysql_backends())
def mysql_only(request: pytest.FixtureRequest) -> str:
    """The ``backend`` fixture of a module that collects other modules' tests
    again on MySQL / MariaDB only (``from backends import mysql_only``)."""
    return str(request.param)


def _mysql_connect(database: str | None = None) -> Any:
    import MySQLdb

    parts = urlsplit(MYSQL_URL)
    return MySQLdb.connect(
        host=parts.hostname or "127.0.0.1",
        port=parts.port or 3306,
        user=unquote(parts.username or "root"),
        password=unquote(parts.password or ""),
        connect_timeout=2,
        binary_prefix=True,
        autocommit=True,
        **({"database": database} if database else {}),
    )


def mysql_reachable() -> bool:
    try:
        _mysql_connect().close()
    except Exception:
        return False
    return True


def mysql_execute(url: str, sql: str, params: tuple[object, ...] = ()) -> int:
    """Run one statement in the database of the MySQL store ``url``, behind
    the store's back; the number of rows it changed."""
    conn = _mysql_connect(urlsplit(url).path.strip("/"))
    try:
        return int(conn.cursor().execute(sql, params or None))
    finally:
        conn.close()


def pg_execute(url: str, sql: str, params: tuple[object, ...] = ()) -> int:
    """Run one statement in the schema of the PostgreSQL store ``url``, behind
    the store's back; the number of rows it changed."""
    import psycopg

    schema = url.split("schema=", 1)[1]
    with psycopg.connect(url.split("?", 1)[0], autocommit=True) as conn:
        conn.execute(f"SET search_path = {schema}")
        return conn.execute(sql, params).rowcount  # type: ignore[arg-type]


def store_url(kind: str, tmp_path: Path) -> str:
    """A fresh store URL of ``kind`` that no other test uses."""
    if kind == "sqlite":
        return f"sqlite:///{tmp_path / 'rota.db'}"
    if kind == "redis":
        if not redis_reachable():
            if IN_CI:
                pytest.fail(f"Redis is not reachable at {REDIS_URL} (CI=true: must not skip)")
            pytest.skip(f"Redis is not reachable at {REDIS_URL}")
        return f"{REDIS_URL}?namespace=test-{uuid.uuid4().hex[:12]}"
    if kind == "postgres":
        if not postgres_reachable():
            if IN_CI:
                pytest.fail(f"PostgreSQL is unreachable at {POSTGRES_URL} (CI=true: must not skip)")
            pytest.skip(f"PostgreSQL is not reachable at {POSTGRES_URL}")
        return f"{POSTGRES_URL}?schema=test_{uuid.uuid4().hex[:12]}"
    if kind == "mysql":
        if not mysql_reachable():
            if IN_CI:
                pytest.fail(f"MySQL is unreachable at {MYSQL_URL} (CI=true: must not skip)")
            pytest.skip(f"MySQL is not reachable at {MYSQL_URL}")
        database = f"rota_test_{uuid.uuid4().hex[:12]}"
        conn = _mysql_connect()
        conn.cursor().execute(f"CREATE DATABASE {database}")
        conn.close()
        return f"{MYSQL_URL}/{database}"
    raise ValueError(kind)


def drop_store(kind: str, url: str) -> None:
    """Remove what a test left in a shared service."""
    if kind == "postgres":
        schema = url.split("schema=", 1)[1]
        pg_execute(url, f"DROP SCHEMA IF EXISTS {schema} CASCADE")
    if kind == "mysql":
        conn = _mysql_connect()
        conn.cursor().execute(f"DROP DATABASE IF EXISTS {urlsplit(url).path.strip('/')}")
        conn.close()
    if kind == "redis":
        import redis

        namespace = url.split("namespace=", 1)[1]
        client = redis.Redis.from_url(url.split("?", 1)[0])
        keys = list(client.scan_iter(match=f"{{rota:{namespace}}}:*", count=1000))
        for start in range(0, len(keys), 1000):
            client.delete(*keys[start : start + 1000])
        client.close()


#: The stored JSON fields of a job that :func:`overwrite_job` may replace
#: (a column of the SQL stores' ``jobs`` table, a field of the Redis job hash).
JOB_JSON_FIELDS = ("payload", "result", "history")


def overwrite_job(kind: str, url: str, job_id: str, raw: bytes, field: str = "payload") -> None:
    """Replace a stored JSON ``field`` of job ``job_id`` with ``raw``, behind
    the store's back, as a damaged disk or a foreign writer would."""
    if field not in JOB_JSON_FIELDS:
        raise ValueError(field)
    if kind == "sqlite":
        import sqlite3

        conn = sqlite3.connect(url.removeprefix("sqlite:///"))
        with conn:
            sql = f"UPDATE jobs SET {field} = ? WHERE id = ?"
            changed = conn.execute(sql, (raw, job_id))
        conn.close()
        assert changed.rowcount == 1, f"no job {job_id} in {url}"
    elif kind == "redis":
        import redis

        from rota.stores.redis.keys import Keys

        client = redis.Redis.from_url(url.split("?", 1)[0])
        key = Keys(url.split("namespace=", 1)[1]).job(job_id)
        assert client.exists(key), f"no job {job_id} in {url}"
        client.hset(key, field, raw)
        client.close()
    elif kind == "postgres":
        if field == "history":  # jsonb: PostgreSQL refuses what is not JSON
            sql = f"UPDATE jobs SET {field} = convert_from(%s, 'UTF8')::jsonb WHERE id = %s"
        else:
            sql = f"UPDATE jobs SET {field} = %s WHERE id = %s"
        assert pg_execute(url, sql, (raw, job_id)) == 1, f"no job {job_id} in {url}"
    elif kind == "mysql":
        sql = f"UPDATE jobs SET {field} = %s WHERE id = %s"
        assert mysql_execute(url, sql, (raw, job_id)) == 1, f"no job {job_id} in {url}"
    else:
        raise ValueError(kind)
