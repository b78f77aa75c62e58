"""Time a page of one queue's jobs, newest first, on a big store.

Fills a fresh store through ``store.enqueue`` in batches: 3.4 % of the jobs
in queue ``old`` first, then the rest interleaved over ``bulk`` (86 %) and
``mail`` (14 %), so that 500,000 jobs put 415,000 in ``bulk`` and leave
``old``'s 17,000 under 483,000 newer ones; then cancels ``mail``'s oldest
40,000 (of its 70,000). Then times ``store.list_jobs`` (50 rows, as the
dashboard's page) per filter: median of 7 after one warm-up.
``queue=bulk&state=cancelled`` finds no job; the last two pages, without a
queue, show that what is done for one queue's pages slows no other listing.

    .venv/bin/python bench/queue_listing.py --url sqlite:////tmp/rota-queues.db
    .venv/bin/python bench/queue_listing.py \
        --url 'postgresql://postgres@127.0.0.1:5432/postgres?schema=queues'

A store that already holds jobs is not filled again; remove it afterwards.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid

from rota import _json
from rota.models import JobQuery, JobState, NewJob
from rota.stores import open_store
from rota.stores.base import Store

#: (what is listed, the query, whether it is the second page)
PAGES = [
    ("no filter", JobQuery(), False),
    ("queue=bulk", JobQuery(queue="bulk"), False),
    ("queue=bulk, page 2", JobQuery(queue="bulk"), True),
    ("queue=bulk&state=queued", JobQuery(queue="bulk", state=JobState.QUEUED), False),
    ("queue=bulk&task=bench.task3", JobQuery(queue="bulk", task="bench.task3"), False),
    ("queue=old", JobQuery(queue="old"), False),
    ("queue=old, page 2", JobQuery(queue="old"), True),
    ("queue=old&task=bench.task3", JobQuery(queue="old", task="bench.task3"), False),
    ("queue=old&state=queued", JobQuery(queue="old", state=JobState.QUEUED), False),
    ("queue=bulk&state=cancelled", JobQuery(queue="bulk", state=JobState.CANCELLED), False),
    ("queue=mail&state=cancelled", JobQuery(queue="mail", state=JobState.CANCELLED), False),
    ("queue=mail&state=queued", JobQuery(queue="mail", state=JobState.QUEUED), False),
    ("state=queued", JobQuery(state=JobState.QUEUED), False),
    ("task=bench.task3", JobQuery(task="bench.task3"), False),
]


def fill(store: Store, total: int, batch: int) -> None:
    old = total * 34 // 1000
    cancelled = total * 8 // 100
    mail: list[str] = []
    started = time.perf_counter()
    for first in range(0, total, batch):
        jobs = []
        for n in range(first, min(total, first + batch)):
            queue = "old" if n < old else "mail" if n % 100 < 14 else "bulk"
            payload = _json.dumps({"args": [f"https://site{n % 997}.example/page/{n}"]})
            task = f"bench.task{n % 8}"
            jobs.append(NewJob(id=uuid.uuid4().hex, task=task, queue=queue, payload=payload))
            if queue == "mail" and len(mail) < cancelled:
                mail.append(jobs[-1].id)
        store.enqueue(jobs)
    rate = total / (time.perf_counter() - started)
    print(f"  enqueued {total:,} ({rate:,.0f} jobs/s)", file=sys.stderr)
    for first in range(0, len(mail), 1000):
        store.cancel(mail[first : first + 1000])
    print(f"  cancelled the oldest {len(mail):,} of queue mail", file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--jobs", type=int, default=500_000)
    parser.add_argument("--batch", type=int, default=5_000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    store = open_store(args.url)
    try:
        if not store.list_jobs(JobQuery(), limit=1).jobs:
            fill(store, args.jobs, args.batch)
        print(f"{'page':<30} median ms")
        for name, query, second in PAGES:
            cursor = store.list_jobs(query, limit=50).next_cursor if second else None
            samples = []
            for _ in range(args.repeat + 1):
                t0 = time.perf_counter()
                store.list_jobs(query, limit=50, cursor=cursor)
                samples.append((time.perf_counter() - t0) * 1000)
            print(f"{name:<30} {statistics.median(samples[1:]):9.1f}")
    finally:
        store.close()


if __name__ == "__main__":
    main()
