"""rota.crawl's side of the crawl bench: a crawler with politeness turned
as far off as its settings go (64 fetches of a host at once, no rate to
speak of, no adaptive level), keeping each page's title as the fetch's
result and following every link.

Workers load it as ``app_rota.py:app`` with ``ROTA_URL`` (the run's private
Redis) and ``BENCH_SEEDS`` (JSON list of seed URLs) in the environment; the
bench loads the same file to send the seeds.
"""

from __future__ import annotations

import json
import os

from rota import App
from rota.crawl import Crawler, Response

app = App()

crawler = Crawler(
    app,
    "bench",
    seeds=json.loads(os.environ.get("BENCH_SEEDS", "[]")),
    per_host=64,
    rate="1000000/s",
    burst=64,
    adapt=False,
    retries=2,
    timeout=30,
)


@crawler.parse
def page(response: Response) -> object:
    """The page's title as an item, and every link."""
    title = response.css_first("title")
    return [{"title": title.text() if title else None}, *response.links()]
