"""The database servers the peers bench runs on: PostgreSQL (every system)
and MySQL / MariaDB (rota alone), each making and dropping the bench's
databases and counting the transactions committed."""

from __future__ import annotations

from typing import Any, Protocol
from urllib.parse import urlsplit


class Server(Protocol):
    """A server that holds one database per measurement."""

    url: str  # without a database name
    #: What :meth:`commits` counts, for the report.
    commits_scope: str

    def create(self, name: str) -> None: ...

    def drop(self, name: str) -> None: ...

    def commits(self, name: str) -> int: ...

    def version(self) -> str: ...


class Postgres:
    """A PostgreSQL server; commits are database ``name``'s (``pg_stat_database``)."""

    commits_scope = "the bench database's"

    def __init__(self, url: str) -> None:
        self.url = url

    def _admin(self) -> Any:
        import psycopg

        return psycopg.connect(f"{self.url}/postgres", autocommit=True)

    def create(self, name: str) -> None:
        with self._admin() as conn:
            conn.execute(f"CREATE DATABASE {name}")

    def drop(self, name: str) -> None:
        with self._admin() as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    def commits(self, name: str) -> int:
        with self._admin() as conn:
            row = conn.execute(
                "SELECT xact_commit FROM pg_stat_database WHERE datname = %s", (name,)
            ).fetchone()
        return int(row[0]) if row else 0

    def version(self) -> str:
        with self._admin() as conn:
            row = conn.execute("SHOW server_version").fetchone()
        return f"PostgreSQL {row[0] if row else '?'}"


class MySQL:
    """A MySQL or MariaDB server; it counts commits for the whole server only
    (``Com_commit``), other clients' included."""

    commits_scope = "the whole server's (Com_commit)"

    def __init__(self, url: str) -> None:
        self.url = url
        parts = urlsplit(url)
        self._connect = {
            "host": parts.hostname or "127.0.0.1",
            "port": parts.port or 3306,
            "user": parts.username or "root",
            "password": parts.password or "",
        }

    def _run(self, sql: str) -> Any:
        import MySQLdb

        conn = MySQLdb.connect(**self._connect)
        try:
            cursor = conn.cursor()
            cursor.execute(sql)
            return cursor.fetchone()
        finally:
            conn.close()

    def create(self, name: str) -> None:
        self._run(f"CREATE DATABASE {name}")

    def drop(self, name: str) -> None:
        self._run(f"DROP DATABASE IF EXISTS {name}")

    def commits(self, name: str) -> int:
        row = self._run("SHOW GLOBAL STATUS LIKE 'Com_commit'")
        return int(row[1]) if row else 0

    def version(self) -> str:
        row = self._run("SELECT VERSION()")
        return f"MySQL/MariaDB {row[0] if row else '?'}"


def server_for(url: str) -> Server:
    """The server of ``url`` (``postgresql://...`` or ``mysql://...``, no database)."""
    if url.startswith("mysql://"):
        return MySQL(url)
    return Postgres(url)
