"""What an idle ``rota worker`` costs: its CPU share and, on SQLite, nothing
else (no polling); on PostgreSQL and Redis also the server's side is idle.

Starts a real worker on a fresh store, lets it settle, then measures the
CPU time it uses over a window with no jobs (median of several windows)::

    python bench/idle_cost.py --url sqlite:////tmp/idle.db
    python bench/idle_cost.py --url redis://127.0.0.1:6379/0 --windows 5

This is a benchmark, not a test: it asserts nothing and prints figures.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _stores import drop, fresh_url  # noqa: E402
from bench import cpu_seconds, worker  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", default="sqlite:////tmp/rota-idle.db")
    parser.add_argument("--settle", type=float, default=3.0, help="seconds before measuring")
    parser.add_argument("--window", type=float, default=10.0, help="seconds per window")
    parser.add_argument("--windows", type=int, default=3)
    args = parser.parse_args()
    import bench_app

    url = fresh_url(args.url)
    os.environ["ROTA_URL"] = url
    app = bench_app.app
    app.url = url
    app.close()
    bench_app.stamp.options(queue="idle").send()  # the store exists before the worker starts
    shares = []
    with worker(url, "threads", 8, "idle") as proc:
        time.sleep(args.settle)
        for n in range(args.windows):
            before, start = cpu_seconds(proc), time.monotonic()
            time.sleep(args.window)
            share = (cpu_seconds(proc) - before) / (time.monotonic() - start) * 100
            shares.append(share)
            print(f"window {n + 1}: {share:.2f} % of a core")
    app.close()
    drop(url)
    print(f"\nidle worker, median of {args.windows}: {statistics.median(shares):.2f} % of a core")


if __name__ == "__main__":
    main()
