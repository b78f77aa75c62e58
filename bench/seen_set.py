"""What the crawl's seen-set costs at scale, beside exact dedup, on Redis.

``seen``: inserts N distinct URLs (default 10,000,000) into a
:class:`rota.crawl.SeenSet` sized for N at the given error rate, in batches
(one script call each), showing progress; then asks for 1,000,000 URLs
never inserted. Reports the bitmap's bytes per URL (Redis ``MEMORY USAGE``
of its key / N), the measured false-positive rate and the insert rate.

``exact``: sends M fetch-like jobs (default 100,000) whose unique key is
their URL, held for a long time as a crawl's is, and reports the store's
memory per URL: the mean ``MEMORY USAGE`` of the unique keys (what stays
for the whole unique time, after the job itself is gone by retention) and
the ``used_memory`` growth / M while the jobs are still there; both
extrapolated linearly to N (said so in the output)::

    python bench/seen_set.py --url redis://127.0.0.1:6379/0
    python bench/seen_set.py --url redis://127.0.0.1:6379/0 --urls 100000 --probe 10000

This is a benchmark, not a test: it asserts nothing and prints figures.
Every run uses a fresh namespace and deletes it afterwards.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _stores import drop, fresh_url  # noqa: E402
from limits_bench import redis_memory, replay_bytes, sample_bytes  # noqa: E402

from rota import App  # noqa: E402
from rota.crawl import SeenSet  # noqa: E402
from rota.crawl.jobs import url_key  # noqa: E402
from rota.crawl.seen_redis import RedisSeen  # noqa: E402


def url_of(i: int, kind: str = "page") -> str:
    """A crawl-like URL (about 60 characters), distinct for each ``i``."""
    return f"https://www.site{i % 5000}.example.com/{kind}/{i // 5000}/item-{i}.html"


def seen_figures(base: str, n: int, probe: int, error_rate: float, batch: int) -> dict[str, float]:
    url = fresh_url(base)
    seen = SeenSet(capacity=n, error_rate=error_rate)
    backend = seen.open(url, "bench")
    assert isinstance(backend, RedisSeen)
    try:
        start = last = time.perf_counter()
        for offset in range(0, n, batch):
            backend.add([url_of(i) for i in range(offset, min(n, offset + batch))])
            if time.perf_counter() - last >= 5 or offset + batch >= n:
                last = time.perf_counter()
                done = min(n, offset + batch)
                print(
                    f"  {done:,} / {n:,} URLs, {done / (last - start):,.0f} URLs/s",
                    file=sys.stderr,
                )
        seconds = time.perf_counter() - start
        memory = backend.memory()
        hits = 0
        for offset in range(0, probe, batch):
            urls = [url_of(i, "never") for i in range(offset, min(probe, offset + batch))]
            hits += sum(backend.contains(urls))
        bits, hashes = seen.size
        return {
            "URLs": n,
            "bits": bits,
            "hashes": hashes,
            "MEMORY USAGE bytes": memory,
            "bytes/URL": memory / n,
            "false positives": hits / probe,
            "insert URLs/s": n / seconds,
        }
    finally:
        backend.close()
        drop(url)


def exact_figures(base: str, m: int, n: int, batch: int) -> dict[str, float]:
    url = fresh_url(base)
    app = App(url)
    try:
        fetch = app.task(name="site.fetch", queue="crawl", unique=url_key, unique_for="365d")(
            lambda url, depth=0, previous=None: None
        )
        app.store.now()  # connect before measuring
        before = redis_memory(url)
        start = time.perf_counter()
        for offset in range(0, m, batch):
            fetch.send_many([(url_of(i), 1, None) for i in range(offset, min(m, offset + batch))])
        seconds = time.perf_counter() - start
        grown = redis_memory(url) - replay_bytes(url) - before
        key = sample_bytes(url, "unique:*")
        return {
            "jobs": m,
            "unique key bytes/URL": key,
            "with pending job bytes/URL": grown / m,
            f"unique keys at {n:,} URLs (extrapolated) MB": key * n / 1e6,
            "send jobs/s": m / seconds,
        }
    finally:
        app.close()
        drop(url)


def show(title: str, figures: dict[str, float]) -> None:
    print(title)
    for name, value in figures.items():
        shown = f"{value:,.4f}" if isinstance(value, float) and value < 10 else f"{value:,.0f}"
        print(f"  {name:<48} {shown}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", default="redis://127.0.0.1:6379/0", help="a Redis store URL")
    parser.add_argument("--urls", type=int, default=10_000_000, help="URLs in the seen-set")
    parser.add_argument("--probe", type=int, default=1_000_000, help="URLs never inserted")
    parser.add_argument("--error-rate", type=float, default=0.01)
    parser.add_argument("--batch", type=int, default=2_000, help="URLs per script call")
    parser.add_argument("--exact", type=int, default=100_000, help="jobs for exact dedup")
    args = parser.parse_args()
    show(
        f"seen-set ({args.error_rate:.2%} at {args.urls:,} URLs)",
        seen_figures(args.url, args.urls, args.probe, args.error_rate, args.batch),
    )
    show(
        f"exact dedup (unique keys; {args.exact:,} jobs, extrapolated to {args.urls:,})",
        exact_figures(args.url, args.exact, args.urls, 5_000),
    )


if __name__ == "__main__":
    main()
