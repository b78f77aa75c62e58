"""What a send in the caller's own database transaction costs, on PostgreSQL
or MySQL / MariaDB: wall time and CPU time of the sending process per send,
each in a transaction of its own (a statement of the caller's, the send,
the commit), beside the same loop with a plain send after the caller's
commit, in turns; medians of several runs on a fresh store each::

    python bench/txsend.py --url postgresql://postgres@127.0.0.1:5432/postgres
    python bench/txsend.py --url mysql://root@127.0.0.1:3306/rota_bench
    PYTHONPATH=/path/to/other/src python bench/txsend.py ...   # another version

This is a benchmark, not a test: it asserts nothing and prints figures.
"""

from __future__ import annotations

import argparse
import statistics
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

from rota import App

#: One loop of sends: ``(app, connection, sends, in_transaction)``.
Loop = Callable[[App, Any, int, bool], None]


@contextmanager
def postgres(url: str) -> Iterator[tuple[App, Any, Loop]]:
    """A store in a fresh schema, a connection of the caller's, and the loop."""
    import psycopg

    schema = f"bench_tx_{uuid.uuid4().hex[:8]}"
    app = App(f"{url}?schema={schema}")
    app.task(name="ship")(lambda order: order)

    def loop(app: App, conn: Any, sends: int, in_transaction: bool) -> None:
        ship = app.tasks["ship"]
        for i in range(sends):
            with conn.transaction():
                conn.execute("SELECT 1")  # the caller's own work
                if in_transaction:
                    ship.send(i, connection=conn)
            if not in_transaction:
                ship.send(i)

    try:
        with psycopg.connect(url) as conn:
            yield app, conn, loop
    finally:
        app.close()
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


@contextmanager
def mysql(url: str) -> Iterator[tuple[App, Any, Loop]]:
    """A store in a fresh database, a connection of the caller's, and the loop."""
    import MySQLdb

    parts = urlsplit(url)
    database = f"bench_tx_{uuid.uuid4().hex[:8]}"
    server = {
        "host": parts.hostname or "127.0.0.1",
        "port": parts.port or 3306,
        "user": parts.username or "root",
        "password": parts.password or "",
    }
    app = App(f"mysql://{parts.netloc}/{database}")
    app.task(name="ship")(lambda order: order)

    def loop(app: App, conn: Any, sends: int, in_transaction: bool) -> None:
        ship = app.tasks["ship"]
        for i in range(sends):
            conn.cursor().execute("SELECT 1")  # the caller's own work
            if in_transaction:
                ship.send(i, connection=conn)
            conn.commit()
            if not in_transaction:
                ship.send(i)

    app.store.queues()  # the database is made
    conn = MySQLdb.connect(**server, database=database)
    try:
        yield app, conn, loop
    finally:
        conn.close()
        app.close()
        admin = MySQLdb.connect(**server, autocommit=True)
        admin.cursor().execute(f"DROP DATABASE IF EXISTS {database}")
        admin.close()


def one_run(url: str, sends: int) -> dict[bool, tuple[float, float]]:
    """Milliseconds and CPU microseconds per send, in the transaction (True)
    and after it (False), over ``sends`` sends each, in turns."""
    store = mysql if url.startswith("mysql:") else postgres
    found: dict[bool, tuple[float, float]] = {}
    with store(url) as (app, conn, loop):
        loop(app, conn, 50, True)  # the pools and the server's caches warm
        loop(app, conn, 50, False)
        for in_transaction in (True, False):
            wall, cpu = time.perf_counter(), time.process_time()
            loop(app, conn, sends, in_transaction)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            found[in_transaction] = (wall / sends * 1e3, cpu / sends * 1e6)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", default="postgresql://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--sends", type=int, default=500)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    runs = [one_run(args.url, args.sends) for _ in range(args.runs)]
    for in_transaction, label in ((True, "in the transaction"), (False, "after the commit")):
        walls = [run[in_transaction][0] for run in runs]
        cpus = [run[in_transaction][1] for run in runs]
        print(
            f"send {label}: ms per send {[round(w, 3) for w in walls]} median "
            f"{statistics.median(walls):.3f}; CPU us per send {[round(c) for c in cpus]} "
            f"median {statistics.median(cpus):.0f}"
        )


if __name__ == "__main__":
    main()
