"""Inspection with a million jobs: how long the dashboard's reads take.

Fills a private ``redis-server`` with N jobs over four queues and five tasks
(a fifth of them run and succeeded, one in a hundred failed), then times
``queues()``, ``get_job``, and the first and a deep page of ``list_jobs``
under each kind of filter.

    .venv/bin/python bench/redis_peers/listing.py --jobs 1000000
"""

from __future__ import annotations

import argparse
import shutil
import socket
import statistics
import subprocess
import time
import uuid
from collections.abc import Callable

import orjson
import redis

from rota.models import JobQuery, JobState, NewJob, Outcome
from rota.stores.redis import RedisStore

QUEUES = ("crawl", "parse", "mail", "reports")
TASKS = ("fetch", "parse", "send", "build", "index")


def timed(fn: Callable[[], object], repeat: int = 5) -> float:
    """Median milliseconds of ``fn()``."""
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def fill(store: RedisStore, n: int) -> list[str]:
    ids = []
    for first in range(0, n, 10_000):
        jobs = [
            NewJob(
                uuid.uuid4().hex,
                TASKS[i % len(TASKS)],
                QUEUES[i % len(QUEUES)],
                orjson.dumps({"args": [f"https://site{i % 997}.example/page/{i}"], "kwargs": {}}),
            )
            for i in range(first, min(n, first + 10_000))
        ]
        ids += [r.id for r in store.enqueue(jobs)]
    for queue in QUEUES:
        done = 0
        while done < n // 5 // len(QUEUES):
            claimed = store.claim("bench", [queue], 1000)
            outcomes = [
                Outcome(c.id, c.token, ok=i % 20 != 0, result=b"200", error="boom")
                for i, c in enumerate(claimed)
            ]
            store.finish(outcomes)
            done += len(claimed)
    return ids


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=1_000_000)
    args = parser.parse_args()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    server = shutil.which("redis-server") or "redis-server"
    proc = subprocess.Popen(
        [server, "--port", str(port), "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
    )
    try:
        client = redis.Redis(port=port)
        for _ in range(200):
            try:
                client.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.02)
        store = RedisStore.from_url(f"redis://127.0.0.1:{port}/0?namespace=big")
        started = time.perf_counter()
        ids = fill(store, args.jobs)
        print(f"filled {args.jobs:,} jobs in {time.perf_counter() - started:.0f} s; "
              f"Redis uses {client.info('memory')['used_memory'] / 2**20:,.0f} MiB")  # fmt: skip

        def deep(query: JobQuery) -> Callable[[], object]:
            def run() -> object:
                page = store.list_jobs(query, limit=50)
                for _ in range(20):  # 20 pages in
                    if page.next_cursor is None:
                        break
                    page = store.list_jobs(query, limit=50, cursor=page.next_cursor)
                return page

            return run

        checks: list[tuple[str, Callable[[], object]]] = [
            ("queues()", store.queues),
            ("get_job", lambda: store.get_job(ids[len(ids) // 2])),
            ("get_jobs x100", lambda: store.get_jobs(ids[:100])),
        ]
        for label, query in [
            ("all", JobQuery()),
            ("state=failed", JobQuery(state=JobState.FAILED)),
            ("queue+state=queued", JobQuery(queue="crawl", state=JobState.QUEUED)),
            ("task=fetch", JobQuery(task="fetch")),
            ("task+state=failed", JobQuery(task="fetch", state=JobState.FAILED)),
            ("search (rare)", JobQuery(search='site7.example/page/7"')),
        ]:
            checks.append((f"list_jobs {label}, first page", lambda q=query: store.list_jobs(q)))
            checks.append((f"list_jobs {label}, 21 pages", deep(query)))
        print("| read | median ms |\n|---|---:|")
        for label, fn in checks:
            print(f"| {label} | {timed(fn):.1f} |")
        store.close()
    finally:
        proc.terminate()
        proc.wait(30)


if __name__ == "__main__":
    main()
