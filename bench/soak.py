"""Whether a worker that runs for long holds steady: its memory, open files
and threads, under a steady stream of jobs.

Starts one real ``rota worker`` (threads, ``--concurrency 8``) on a fresh
store and sends it ``bench_app.chore`` jobs at a steady rate: each logs and
prints a line (kept in the job's log), holds a concurrency key's slot and
returns a small result; every tenth fails its first attempt and succeeds
on its retry. The worker purges finished jobs older than ``--retention``
as a deployment with a short retention does. Every ``--every`` seconds it
prints the worker's resident and unique memory, open files, threads and
the backlog; at the end, how memory moved after the warm-up: the medians of
its first and second halves (a leak grows between them; a step while the
worker warms up does not), and a line fitted through the samples::

    python bench/soak.py --url sqlite:////tmp/rota-soak.db --minutes 10
    python bench/soak.py --url redis://127.0.0.1:6379/9 --minutes 10 --rate 500

This is a benchmark, not a test: it asserts nothing and prints figures.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _stores import drop, fresh_url  # noqa: E402
from bench import worker  # noqa: E402

QUEUE = "soak"


@dataclass(frozen=True)
class Sample:
    """The worker at one moment."""

    minute: float
    rss_mib: float
    uss_mib: float
    files: int
    threads: int
    sent: int
    backlog: int


def sample(proc: psutil.Process, started: float, sent: int, backlog: int) -> Sample:
    """The worker ``proc`` now."""
    memory = proc.memory_full_info()
    return Sample(
        minute=(time.monotonic() - started) / 60,
        rss_mib=memory.rss / 2**20,
        uss_mib=memory.uss / 2**20,
        files=proc.num_fds(),
        threads=proc.num_threads(),
        sent=sent,
        backlog=backlog,
    )


def median(samples: list[Sample], value: str) -> float:
    """The median of ``value`` over ``samples``."""
    return statistics.median(getattr(s, value) for s in samples)


def slope(samples: list[Sample], value: str) -> float:
    """Least-squares growth of ``value`` per minute over ``samples``."""
    xs = [s.minute for s in samples]
    ys = [getattr(s, value) for s in samples]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    spread = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / spread


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", default="sqlite:////tmp/rota-soak.db")
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--rate", type=int, default=300, help="jobs sent per second")
    parser.add_argument("--every", type=float, default=15.0, help="seconds between samples")
    parser.add_argument("--warmup", type=float, default=2.0, help="minutes left out of the fit")
    parser.add_argument("--retention", default="60s", help="the worker's retention")
    args = parser.parse_args()
    os.environ["BENCH_RETENTION"] = args.retention
    import bench_app

    url = fresh_url(args.url)
    os.environ["ROTA_URL"] = url
    app = bench_app.app
    app.url = url
    app.close()
    bench_app.chore.options(queue=QUEUE).send(-1)  # the store exists before the worker starts
    chore = bench_app.chore.options(queue=QUEUE)
    samples: list[Sample] = []
    sent = 0
    print("minute  RSS MiB  USS MiB  files  threads     sent  backlog")
    with worker(url, "threads", 8, QUEUE) as proc:
        started = time.monotonic()
        end = started + args.minutes * 60
        next_sample = started + args.every  # (the worker has started by then)
        tick = 0.1  # send a tenth of a second's jobs at a time
        while (now := time.monotonic()) < end:
            due = int((now - started) * args.rate) - sent
            if due > 0:
                chore.send_many([(n,) for n in range(sent, sent + due)])
                sent += due
            if now >= next_sample:
                counts = {q.name: q.counts for q in app.store.queues()}.get(QUEUE, {})
                backlog = sum(n for state, n in counts.items() if not state.finished)
                samples.append(sample(proc, started, sent, backlog))
                s = samples[-1]
                print(
                    f"{s.minute:6.1f}  {s.rss_mib:7.1f}  {s.uss_mib:7.1f}  {s.files:5d}"
                    f"  {s.threads:7d}  {s.sent:7d}  {s.backlog:7d}",
                    flush=True,
                )
                next_sample += args.every
            time.sleep(max(0.0, started + (int((now - started) / tick) + 1) * tick - now))
    app.close()
    drop(url)
    steady = [s for s in samples if s.minute >= args.warmup]
    if len(steady) < 4:
        print("\ntoo few samples after the warm-up: run longer")
        return
    half = len(steady) // 2
    early, late = steady[:half], steady[half:]
    print(
        f"\nafter minute {args.warmup:g}: RSS median {median(early, 'rss_mib'):.1f} MiB in the"
        f" first half, {median(late, 'rss_mib'):.1f} in the second (USS"
        f" {median(early, 'uss_mib'):.1f} / {median(late, 'uss_mib'):.1f}; a line through all:"
        f" {slope(steady, 'rss_mib') * 1024:+.0f} KiB/min); open files"
        f" {min(s.files for s in steady)}-{max(s.files for s in steady)}, threads"
        f" {min(s.threads for s in steady)}-{max(s.threads for s in steady)};"
        f" {sent:,} jobs sent at {args.rate}/s, backlog at the end {samples[-1].backlog}"
    )


if __name__ == "__main__":
    main()
