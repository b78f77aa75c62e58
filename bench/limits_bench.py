"""rota's flow-control benchmark: what limits and uniqueness cost.

``claims``: claim-and-finish throughput through the store protocol (one
process claiming batches and finishing them at once, so the figure is the
store's own cost), with 10,000 jobs that each carry a distinct limit key
against the same number of jobs without limits. ``--worker`` drains through
a real ``rota worker`` process instead.

``key``: jobs that sleep ``--sleep`` seconds, all under one concurrency
key of ``--limit`` slots, drained by ``--workers`` real ``rota worker``
processes; jobs/s, and the share of the key's slots that ran jobs (jobs/s
against ``limit / sleep``). A running job holds its slot until its worker
has reported it and the next claim has taken the slot: with short jobs
those round trips are a large part of each slot's turn.

``unique`` (Redis): send 1,000,000 distinct URLs in bulk with
``unique=lambda url: url, unique_for="7d"``, then send them all again (every
one a duplicate); jobs/s for both passes and the store's memory per URL
(``INFO memory`` ``used_memory`` delta / N, without the short-lived replay
copies of batch replies).

Every figure is the median over ``--runs`` fresh stores::

    python bench/limits_bench.py claims --url sqlite:////tmp/rota-limits.db
    python bench/limits_bench.py claims --url redis://127.0.0.1:6379/0 --worker
    python bench/limits_bench.py key --url sqlite:////tmp/rota-limits.db --jobs 3000 --workers 3
    python bench/limits_bench.py unique --url redis://127.0.0.1:6379/0 --urls 1000000

This is a benchmark, not a test: it prints figures and asserts only that
the work was done.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from _stores import drop, fresh_url

from rota import App, Breaker, Limit, Rate
from rota.models import JobState, Outcome
from rota.stores import Store

HERE = Path(__file__).resolve()

#: The app a ``--worker`` run loads (``rota worker bench/limits_bench.py:app``).
app = App(os.environ.get("ROTA_URL", "sqlite:///limits-bench.db"))


def touch(key: str) -> None:
    """Does nothing with its key: measures rota's own overhead."""


app.task(name="touch")(touch)


def nap(seconds: float) -> None:
    """Sleeps ``seconds``: a short job of the ``key`` workload."""
    time.sleep(seconds)


app.task(name="nap")(nap)


def key_of(key: str) -> str:
    return key


#: Claim workloads: name -> task options (keys from the job's argument).
WORKLOADS: dict[str, dict[str, Any]] = {
    "no limits": {},
    "concurrency": {"concurrency": Limit(key_of, 1)},
    "rate": {"rate": Rate("10/s", burst=1, key=key_of)},
    "conc+rate+breaker": {
        "concurrency": Limit(key_of, 2),
        "rate": Rate("10/s", burst=1, key=key_of),
        "breaker": Breaker(5, "1m", key=key_of),
    },
}


@contextmanager
def opened(base: str) -> Iterator[App]:
    """A sending app on a fresh store, dropped afterwards."""
    url = fresh_url(base)
    sending = App(url)
    try:
        yield sending
    finally:
        sending.close()
        drop(url)


def send(sending: App, options: dict[str, Any], n: int, batch: int = 5000) -> None:
    task = sending.task(name="touch", **options)(touch)
    for offset in range(0, n, batch):
        task.send_many([(f"site{i}.example",) for i in range(offset, min(n, offset + batch))])


def drain_by_protocol(store: Store, n: int, batch: int) -> float:
    """Claim ``batch`` at a time and finish each batch at once; jobs/s."""
    done = 0
    start = time.perf_counter()
    while done < n:
        claimed = store.claim("bench", ["default"], batch)
        if not claimed:
            raise RuntimeError(f"claim came back empty after {done} of {n} jobs")
        applied = store.finish([Outcome(c.id, c.token, True, result=b"null") for c in claimed])
        assert all(applied)
        done += len(claimed)
    return n / (time.perf_counter() - start)


def succeeded(store: Store) -> int:
    counts = {q.name: q.counts for q in store.queues()}.get("default", {})
    return counts.get(JobState.SUCCEEDED, 0)


def drain_by_worker(url: str, store: Store, n: int, concurrency: int, workers: int = 1) -> float:
    """Start ``workers`` real workers on the queued jobs; jobs/s until all succeeded."""
    rota = Path(sys.executable).with_name("rota")
    cmd = [str(rota), "worker", f"{HERE}:app", "--url", url, "--concurrency", str(concurrency)]
    cmd += ["--log-level", "WARNING"]
    procs = [
        subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(workers)
    ]
    try:
        deadline = time.monotonic() + 600
        while succeeded(store) == 0:  # from the first job done: startup is not rota's cost
            if time.monotonic() > deadline or any(p.poll() is not None for p in procs):
                raise RuntimeError("the worker did not start")
            time.sleep(0.005)
        start, first = time.perf_counter(), succeeded(store)
        while (done := succeeded(store)) < n:
            if time.monotonic() > deadline:
                raise RuntimeError(f"only {done} of {n} jobs done in time")
            time.sleep(0.01)
        return (n - first) / (time.perf_counter() - start)
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def blocked_claim_ms(base: str, keys: int, batch: int) -> float:
    """Milliseconds of a claim that finds nothing: ``keys`` sites each with a
    job waiting for a token (Rate 1/m) after one round was claimed."""
    with opened(base) as sending:
        send(sending, {"rate": Rate("1/m", key=key_of)}, keys)
        send(sending, {"rate": Rate("1/m", key=key_of)}, keys)
        store = sending.store
        while store.claim("bench", ["default"], 500):
            pass
        timings = []
        for _ in range(20):
            start = time.perf_counter()
            assert not store.claim("bench", ["default"], batch)
            timings.append((time.perf_counter() - start) * 1000)
        return statistics.median(timings)


def claims_once(args: argparse.Namespace) -> dict[str, float]:
    figures: dict[str, float] = {}
    for name in args.workloads:
        options = WORKLOADS[name]
        with opened(args.url) as sending:
            send(sending, options, args.jobs)
            if args.worker:
                rate = drain_by_worker(sending.url, sending.store, args.jobs, args.concurrency)
            else:
                rate = drain_by_protocol(sending.store, args.jobs, args.batch)
            figures[name] = rate
            if options:
                keys = len(sending.store.limits())
                assert keys >= args.jobs, f"{name}: {keys} limit keys"
    if not args.no_blocked:
        figures["empty claim ms (1k blocked keys)"] = blocked_claim_ms(args.url, 1000, args.batch)
    return figures


def key_once(args: argparse.Namespace) -> dict[str, float]:
    """Jobs of one shared concurrency key drained by real workers."""
    with opened(args.url) as sending:
        task = sending.task(name="nap", concurrency=Limit("shared", args.limit))(nap)
        for offset in range(0, args.jobs, 5000):
            task.send_many([(args.sleep,)] * min(5000, args.jobs - offset))
        rate = drain_by_worker(
            sending.url, sending.store, args.jobs, args.concurrency, workers=args.workers
        )
    return {"jobs/s": rate, "key's slots in use %": 100 * rate * args.sleep / args.limit}


def redis_memory(url: str) -> int:
    import redis

    client = redis.Redis.from_url(url.split("?", 1)[0])
    used = int(client.info("memory")["used_memory"])
    client.close()
    return used


def replay_bytes(url: str) -> int:
    """Memory held by the replay copies of batch replies (they expire)."""
    import redis

    namespace = url.rsplit("namespace=", 1)[1]
    client = redis.Redis.from_url(url.split("?", 1)[0])
    total = sum(
        client.memory_usage(key) or 0
        for key in client.scan_iter(match=f"{{rota:{namespace}}}:req:*", count=5000)
    )
    client.close()
    return total


def sample_bytes(url: str, pattern: str, n: int = 1000) -> float:
    """Mean MEMORY USAGE of up to ``n`` keys matching ``pattern`` in the namespace."""
    import redis

    namespace = url.rsplit("namespace=", 1)[1]
    client = redis.Redis.from_url(url.split("?", 1)[0])
    sizes = []
    for key in client.scan_iter(match=f"{{rota:{namespace}}}:{pattern}", count=1000):
        sizes.append(client.memory_usage(key, samples=0) or 0)
        if len(sizes) >= n:
            break
    client.close()
    return statistics.mean(sizes) if sizes else 0.0


def unique_once(args: argparse.Namespace) -> dict[str, float]:
    n, batch = args.urls, args.batch_send
    urls = [f"https://site{i % 1000}.example/page/{i}" for i in range(n)]
    figures: dict[str, float] = {}
    with opened(args.url) as sending:
        page = sending.task(name="page", unique=lambda url: url, unique_for="7d")(touch)
        sending.store.now()  # connect before timing
        before = redis_memory(sending.url)

        def send_all() -> tuple[float, int]:
            dupes = 0
            start = time.perf_counter()
            for offset in range(0, n, batch):
                handles = page.send_many([(u,) for u in urls[offset : offset + batch]])
                dupes += sum(h.duplicate for h in handles)
            return n / (time.perf_counter() - start), dupes

        figures["send new/s"], dupes = send_all()
        assert dupes == 0, f"{dupes} of {n} new URLs were taken for duplicates"
        after = redis_memory(sending.url) - replay_bytes(sending.url)
        figures["bytes/URL"] = (after - before) / n
        figures["unique key B"] = sample_bytes(sending.url, "unique:*")
        figures["job hash B"] = sample_bytes(sending.url, "job:*")
        figures["send dup/s"], dupes = send_all()
        assert dupes == n, f"only {dupes} of {n} repeated URLs were found duplicate"
    return figures


def has_redis_store() -> bool:
    return importlib.util.find_spec("rota.stores.redis") is not None


def report(title: str, runs: list[dict[str, float]]) -> dict[str, float]:
    medians = {key: statistics.median(r[key] for r in runs) for key in runs[0]}
    print(f"\n{title} (median of {len(runs)} run{'s' * (len(runs) > 1)}):")
    for key, value in medians.items():
        print(f"  {key:32s} {value:12,.1f}")
    return medians


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("workload", choices=["claims", "key", "unique", "all"])
    parser.add_argument("--url", default="sqlite:////tmp/rota-limits-bench.db")
    parser.add_argument("--jobs", type=int, default=10_000, help="claims: jobs (= keys); key: jobs")
    parser.add_argument("--batch", type=int, default=16, help="claims: jobs per claim")
    parser.add_argument(
        "--workloads",
        type=lambda text: [w.strip() for w in text.split(",")],
        default=list(WORKLOADS),
        help=f"claims: comma-separated, from: {', '.join(WORKLOADS)}",
    )
    parser.add_argument("--no-blocked", action="store_true", help="claims: skip the empty claim")
    parser.add_argument("--worker", action="store_true", help="claims: drain with rota worker")
    parser.add_argument(
        "--concurrency", type=int, default=8, help="claims (--worker), key: each worker's slots"
    )
    parser.add_argument("--sleep", type=float, default=0.01, help="key: seconds per job")
    parser.add_argument("--limit", type=int, default=6, help="key: the key's slots")
    parser.add_argument("--workers", type=int, default=1, help="key: rota worker processes")
    parser.add_argument("--urls", type=int, default=1_000_000, help="unique: URLs sent")
    parser.add_argument("--batch-send", type=int, default=5000, help="unique: URLs per send")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    if unknown := set(args.workloads) - set(WORKLOADS):
        parser.error(f"unknown workload(s): {', '.join(sorted(unknown))}")

    if args.workload in ("claims", "all"):
        how = f"rota worker -c {args.concurrency}" if args.worker else f"batches of {args.batch}"
        runs = run_many(args, claims_once)
        report(f"claim+finish jobs/s, {args.jobs:,} jobs, {how}, {args.url}", runs)
        for name in args.workloads:  # ratios per run, so a noisy machine cancels out
            if name != "no limits" and "no limits" in args.workloads:
                ratio = statistics.median(r[name] / r["no limits"] for r in runs)
                print(f"  {name} / no limits: {ratio:.2f}")
    if args.workload in ("key", "all"):
        runs = run_many(args, key_once)
        title = f"{args.jobs:,} jobs of {args.sleep * 1000:g} ms under one key of {args.limit}"
        report(f"{title}, {args.workers} x rota worker -c {args.concurrency}, {args.url}", runs)
    if args.workload in ("unique", "all"):
        if not args.url.startswith(("redis://", "rediss://", "unix://")):
            print("\nunique: skipped, it measures the Redis store (give --url redis://...)")
        elif not has_redis_store():
            print("\nunique: skipped, rota.stores.redis is not available")
        else:
            runs = run_many(args, unique_once)
            report(f"uniqueness, {args.urls:,} distinct URLs in batches of {args.batch_send}", runs)


def run_many(
    args: argparse.Namespace, once: Callable[[argparse.Namespace], dict[str, float]]
) -> list[dict[str, float]]:
    runs = []
    for n in range(args.runs):
        figures = once(args)
        runs.append(figures)
        print(f"run {n + 1}: " + "  ".join(f"{k}={v:,.1f}" for k, v in figures.items()))
    return runs


if __name__ == "__main__":
    main()
