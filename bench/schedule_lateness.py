"""How late an idle scheduler fires: p50 and p99 of enqueued-at minus fire time.

Starts one scheduler in a separate process, then defines five schedules of
``every(0.1)``, staggered 20 ms apart so that fires never coincide, waits for
1,000 fires, and reads each job's lateness from the store (``enqueued_at -
fire_time``, both on the store's clock). Prints the median of several runs::

    python bench/schedule_lateness.py --url sqlite:///tmp/lateness.db
    python bench/schedule_lateness.py --url redis://127.0.0.1:6379/0 --runs 5

This is a benchmark, not a test: it asserts nothing and prints figures.
"""

from __future__ import annotations

import argparse
import math
import signal
import statistics
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime

from _stores import drop, fresh_url

from rota import App, every
from rota.models import JobQuery
from rota.scheduling.scheduler import Scheduler

SCHEDULES = 5
INTERVAL = 0.1


def define(app: App) -> None:
    """Five every(0.1 s) schedules whose fires fall 20 ms apart, starting in a second."""
    app.task(name="noop")(lambda: None)
    start = math.ceil(app.store.now()) + 1.0
    for index in range(SCHEDULES):
        anchor = datetime.fromtimestamp(start + index * INTERVAL / SCHEDULES, UTC)
        app.schedule(f"lateness-{index}", "noop", every(INTERVAL, start=anchor), misfire="all")


def serve(url: str) -> None:
    """The scheduler process: say "ready" once connected, then fire until SIGTERM."""
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda signum, frame: stop.set())
    scheduler = Scheduler(App(url))
    scheduler.tick()
    print("ready", flush=True)
    scheduler.run(stop)


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def latenesses(app: App) -> list[float]:
    found: list[float] = []
    cursor: str | None = None
    while True:
        page = app.store.list_jobs(JobQuery(), limit=1000, cursor=cursor)
        found += [j.enqueued_at - j.fire_time for j in page.jobs if j.fire_time is not None]
        if page.next_cursor is None:
            return found
        cursor = page.next_cursor


def one_run(base: str, fires: int) -> tuple[float, float, float]:
    """p50, p99 and max lateness in seconds over ``fires`` fires."""
    url = fresh_url(base)
    app = App(url)
    app.store.schedules()  # create the store before the scheduler opens it
    child = subprocess.Popen(
        [sys.executable, __file__, "--serve", url], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None
        child.stdout.readline()  # started and connected: its start-up is not lateness
        define(app)
        deadline = time.monotonic() + fires * INTERVAL / SCHEDULES + 60
        while time.monotonic() < deadline:
            counts = sum(sum(q.counts.values()) for q in app.store.queues())
            if counts >= fires:
                break
            time.sleep(0.5)
    finally:
        child.send_signal(signal.SIGTERM)
        child.wait(30)
    values = latenesses(app)
    app.close()
    drop(url)
    return percentile(values, 0.5), percentile(values, 0.99), max(values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="sqlite:////tmp/rota-lateness.db")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--fires", type=int, default=1000)
    parser.add_argument("--serve", metavar="URL", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve)
        return
    results = []
    for run in range(args.runs):
        p50, p99, worst = one_run(args.url, args.fires)
        results.append((p50, p99, worst))
        print(
            f"run {run + 1}: p50 {p50 * 1000:.1f} ms  p99 {p99 * 1000:.1f} ms  "
            f"max {worst * 1000:.1f} ms"
        )
    p50s, p99s, worsts = zip(*results, strict=True)
    print(
        f"median of {args.runs} runs, {args.fires} fires each: "
        f"p50 {statistics.median(p50s) * 1000:.1f} ms  "
        f"p99 {statistics.median(p99s) * 1000:.1f} ms  "
        f"max {statistics.median(worsts) * 1000:.1f} ms"
    )


if __name__ == "__main__":
    main()
