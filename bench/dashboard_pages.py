"""Time the dashboard's pages and API reads on a big store (SQLite, Redis or PostgreSQL).

Fills a store with N jobs through ``store.enqueue`` in batches (spread over
4 queues and 8 tasks), runs a slice of them through ``claim``/``finish`` so
that every state and the throughput counters are populated, then requests
each page several times in-process with Starlette's TestClient and prints
the median time per page: the time spent in the server, with no network.

    .venv/bin/python bench/dashboard_pages.py --jobs 1000000 --db /tmp/rota-bench.db
    .venv/bin/python bench/dashboard_pages.py --jobs 1000000 --url redis://127.0.0.1:6390/0
    .venv/bin/python bench/dashboard_pages.py --jobs 1000000 \
        --url 'postgresql://postgres@127.0.0.1:5432/postgres?schema=pages'

A database (a PostgreSQL schema) that already holds the requested number of
jobs is reused; remove it afterwards (``DROP SCHEMA pages CASCADE``). To
see where a slow page's time goes on PostgreSQL, run the store's read
queries (``src/rota/stores/postgres/queries/reads.sql``) in ``psql`` under
``EXPLAIN ANALYZE``, after ``SET search_path = pages``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid
from pathlib import Path

from starlette.testclient import TestClient

import rota
from rota import _json
from rota.models import JobQuery, JobState, NewJob, Outcome
from rota.stores.base import Store
from rota.web import create_app

QUEUES = ("default", "crawl", "mail", "reports")
TASKS = tuple(f"bench.task{i}" for i in range(8))


def fill(store: Store, total: int, batch: int) -> None:
    """Enqueue ``total`` jobs in batches of ``batch``."""
    started = time.perf_counter()
    for first in range(0, total, batch):
        jobs = []
        for n in range(first, min(total, first + batch)):
            payload = _json.dumps(
                {"args": [f"https://site{n % 997}.example/page/{n}"], "kwargs": {}}
            )
            jobs.append(
                NewJob(
                    id=uuid.uuid4().hex,
                    task=TASKS[n % len(TASKS)],
                    queue=QUEUES[n % len(QUEUES)],
                    payload=payload,
                )
            )
        store.enqueue(jobs)
        done = first + len(jobs)
        if done % (batch * 20) == 0 or done == total:
            rate = done / (time.perf_counter() - started)
            print(f"  enqueued {done:>9,} ({rate:,.0f} jobs/s)", file=sys.stderr)


def run_some(store: Store, count: int, fail_every: int = 10) -> None:
    """Claim and finish ``count`` jobs (one in ``fail_every`` fails), as workers would."""
    done = 0
    while done < count:
        claimed = store.claim("bench-worker", list(QUEUES), min(1000, count - done))
        if not claimed:
            break
        outcomes = [
            Outcome(c.id, c.token, ok=False, error="ValueError: bench", traceback="Traceback ...")
            if i % fail_every == 0
            else Outcome(c.id, c.token, ok=True, result=b'{"status": 200}')
            for i, c in enumerate(claimed)
        ]
        store.finish(outcomes)
        done += len(claimed)


def count_jobs(store: Store) -> int:
    """Jobs in the store, by the queue counts."""
    return sum(sum(q.counts.values()) for q in store.queues())


def time_pages(client: TestClient, paths: list[str], repeat: int) -> list[tuple[str, float, int]]:
    """Median milliseconds of ``repeat`` requests per path (after one warm-up)."""
    results = []
    for path in paths:
        status = client.get(path).status_code
        samples = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            answer = client.get(path)
            samples.append((time.perf_counter() - t0) * 1000)
            status = answer.status_code
        results.append((path, statistics.median(samples), status))
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=1_000_000)
    parser.add_argument("--db", type=Path, default=Path("/tmp/rota-bench.db"))
    parser.add_argument("--url", help="a store URL instead of --db (e.g. redis://...)")
    parser.add_argument("--batch", type=int, default=5000)
    parser.add_argument("--finish", type=int, default=50_000, help="jobs to run through")
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()

    app = rota.App(args.url or f"sqlite:///{args.db}")
    store = app.store
    have = count_jobs(store)
    if have != args.jobs:
        if have:
            sys.exit(f"{app!r} holds {have:,} jobs, not {args.jobs:,}: empty it first")
        print(f"filling {app!r} with {args.jobs:,} jobs", file=sys.stderr)
        fill(store, args.jobs, args.batch)
        run_some(store, args.finish)
    counts = {s.value: 0 for s in JobState}
    for q in store.queues():
        for state, n in q.counts.items():
            counts[state.value] += n
    print(f"store: {sum(counts.values()):,} jobs {counts}")

    page = store.list_jobs(JobQuery(), limit=1000)
    middle = page
    for _ in range(args.jobs // 2000):  # walk to the middle: cursors are the store's own
        if middle.next_cursor is None:
            break
        middle = store.list_jobs(JobQuery(), limit=1000, cursor=middle.next_cursor)
    deep, deep_cursor = middle.jobs[0], middle.next_cursor or ""
    failed = store.list_jobs(JobQuery(state=JobState.FAILED), limit=1).jobs
    detail = failed[0].id if failed else page.jobs[0].id
    paths = [
        "/",
        "/jobs",
        "/jobs?state=failed",
        "/jobs?queue=crawl&state=queued",
        f"/jobs?cursor={deep_cursor}",
        "/jobs?task=bench.task3&limit=200",
        "/jobs?search=site5.example/page/5",
        f"/jobs/{detail}",
        "/queues",
        "/schedules",
        "/workers",
        "/api/stats",
        "/api/stats/live",
        "/api/jobs?limit=100",
        "/api/jobs?state=succeeded&queue=mail",
        f"/api/jobs/{deep.id}",
        "/metrics",
    ]
    with TestClient(create_app(app), base_url="http://localhost") as client:
        rows = time_pages(client, paths, args.repeat)
    width = max(len(p) for p, _, _ in rows)
    print(f"{'page':<{width}}  median ms  status")
    for path, ms, status in rows:
        print(f"{path:<{width}}  {ms:9.1f}  {status}")
    app.close()


if __name__ == "__main__":
    main()
