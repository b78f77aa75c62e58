"""A small crawler to watch rota work: ``rota run examples/demo.py:app``.

No network is used: ``fetch`` pretends to download a page of an imaginary
site, sometimes fails (and is retried with backoff), and discovers links
that become new jobs. Each site is fetched politely (a rate and a
concurrency limit per host), each URL at most once every two minutes, and a schedule seeds
the crawl every 10 seconds.
"""

from __future__ import annotations

import hashlib
import random
import time
from urllib.parse import urlsplit

from rota import App, Breaker, Limit, Rate, current_job, every

app = App()  # ROTA_URL, else sqlite:///rota.db

SITES = ["example.com", "example.org", "example.net", "docs.example.com", "blog.example.org"]
MAX_DEPTH = 3


def host(url: str) -> str:
    """The site a URL belongs to: the key of its limits."""
    return urlsplit(url).hostname or "unknown"


@app.task(
    queue="crawl",
    retries=3,
    backoff=(0.5, 10.0),
    rate=Rate("5/s", burst=5, key=host),
    concurrency=Limit(key=host, limit=2),
    breaker=Breaker(failures=10, cooldown=30, key=host),
    unique=lambda url: url,
    unique_for="2m",
)
def fetch(url: str) -> dict[str, object]:
    """Pretend to fetch ``url``; send a job for each link found on it."""
    time.sleep(random.uniform(0.02, 0.2))
    if random.random() < 0.1:
        raise ConnectionError(f"simulated network error fetching {url}")
    depth = urlsplit(url).path.count("/") - 1
    links = []
    if depth < MAX_DEPTH:
        digest = hashlib.sha1(url.encode()).hexdigest()
        links = [f"{url.rstrip('/')}/{digest[i : i + 4]}" for i in range(0, 12, 4)]
        fetch.send_many([(link,) for link in links])
    current_job().logger.info("fetched %s, %d links", url, len(links))
    return {"url": url, "links": len(links), "bytes": random.randint(2_000, 80_000)}


@app.task(concurrency=Limit("reports", 1))
def report(pages: int) -> str:
    """A periodic script: at most one runs at a time, cluster-wide."""
    time.sleep(0.5)
    return f"report over {pages} pages"


@app.task()
def seed() -> int:
    """Start a crawl of every site (URLs fetched in the last two minutes are skipped)."""
    handles = fetch.send_many([(f"https://{site}/",) for site in SITES])
    report.send(len(handles))
    return sum(not h.duplicate for h in handles)


app.schedule("seed-crawl", seed, every(seconds=10))
