"""Drain N no-op jobs through one store in one process: claim(batch) then
finish(batch), one round trip each. Prints enqueue and drain rates.

    .venv/bin/python bench/redis_peers/drain.py --url redis://127.0.0.1:6379/0 --jobs 20000
"""

from __future__ import annotations

import argparse
import time
import uuid

import orjson

from rota.models import NewJob, Outcome
from rota.stores import open_store


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--url", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--batch", type=int, default=100)
    args = parser.parse_args()
    namespace = f"bench-{uuid.uuid4().hex[:8]}"
    url = args.url
    if url.startswith("redis"):
        url += ("&" if "?" in url else "?") + f"namespace={namespace}"
    store = open_store(url)
    payload = orjson.dumps({"args": [], "kwargs": {}})
    try:
        started = time.perf_counter()
        for first in range(0, args.jobs, 1000):
            count = min(1000, args.jobs - first)
            store.enqueue(
                [NewJob(uuid.uuid4().hex, "noop", "bench", payload) for _ in range(count)]
            )
        enqueued = time.perf_counter() - started

        started = time.perf_counter()
        done = 0
        while done < args.jobs:
            claimed = store.claim("bench-worker", ["bench"], args.batch)
            if not claimed:
                raise SystemExit(f"queue ran dry after {done} jobs")
            applied = store.finish(
                [Outcome(c.id, c.token, ok=True, result=b"null") for c in claimed]
            )
            assert all(applied)
            done += len(claimed)
        drained = time.perf_counter() - started
        print(
            f"{store.kind}: enqueue {args.jobs / enqueued:,.0f} jobs/s; "
            f"drain (claim+finish, batch {args.batch}) {args.jobs / drained:,.0f} jobs/s"
        )
    finally:
        if url.startswith("redis"):
            import redis

            client = redis.Redis.from_url(args.url)
            for key in client.scan_iter(match=f"{{rota:{namespace}}}:*", count=1000):
                client.delete(key)
            client.close()
        store.close()


if __name__ == "__main__":
    main()
