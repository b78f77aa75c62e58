"""What a send in the caller's own PostgreSQL transaction costs: wall time
and CPU time of the sending process per send, each send in a transaction of
its own (a statement of the caller's, the send, the commit), medians of
several runs on a fresh schema each::

    python bench/pg_txsend.py --url postgresql://postgres@127.0.0.1:5432/postgres
    PYTHONPATH=/path/to/other/src python bench/pg_txsend.py ...   # another version

This is a benchmark, not a test: it asserts nothing and prints figures.
"""

from __future__ import annotations

import argparse
import statistics
import time
import uuid

import psycopg

from rota import App


def one_run(database: str, sends: int) -> tuple[float, float]:
    """Milliseconds and CPU microseconds per send, over ``sends`` sends."""
    schema = f"bench_tx_{uuid.uuid4().hex[:8]}"
    app = App(f"{database}?schema={schema}")
    ship = app.task(name="ship")(lambda order: order)
    try:
        with psycopg.connect(database) as conn:
            for i in range(50):  # the pools and the server's caches warm
                with conn.transaction():
                    ship.send(i, connection=conn)
            wall, cpu = time.perf_counter(), time.process_time()
            for i in range(sends):
                with conn.transaction():
                    conn.execute("SELECT 1")  # the caller's own work
                    ship.send(i, connection=conn)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    finally:
        app.close()
        with psycopg.connect(database, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
    return wall / sends * 1e3, cpu / sends * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", default="postgresql://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--sends", type=int, default=500)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    runs = [one_run(args.url, args.sends) for _ in range(args.runs)]
    walls, cpus = [w for w, _ in runs], [c for _, c in runs]
    print(
        f"ms per send {[round(w, 3) for w in walls]} median {statistics.median(walls):.3f}; "
        f"CPU us per send median {statistics.median(cpus):.0f}"
    )


if __name__ == "__main__":
    main()
