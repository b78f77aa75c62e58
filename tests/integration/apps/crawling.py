"""A crawl app for tests/integration/test_crawl.py.

Workers load it as ``crawling.py:app``; the test loads the same file to
send the seeds. Both read the crawl's settings from the environment:

- ``ROTA_TEST_SEEDS``: the seed URLs, as JSON;
- ``ROTA_TEST_RECRAWL``: the recrawl age in seconds (unset: none);
- ``ROTA_TEST_SEEN``: set: the crawl keeps a seen-set (a small Bloom filter);
- ``ROTA_TEST_RATE``: each host's rate (default ``10/s``);
- ``ROTA_TEST_PARSED``: a file that gets one ``pid url`` line per page the
  parse callback sees.
"""

from __future__ import annotations

import json
import os

from rota import App
from rota.crawl import Adaptive, Crawler, Response, SeenSet

app = App()

crawler = Crawler(
    app,
    "site",
    seeds=json.loads(os.environ.get("ROTA_TEST_SEEDS", "[]")),
    deny=r"/skip/",
    max_depth=None if os.environ.get("ROTA_TEST_MAX_DEPTH") == "none" else 6,
    recrawl=float(os.environ["ROTA_TEST_RECRAWL"]) if "ROTA_TEST_RECRAWL" in os.environ else None,
    per_host=2,
    rate=os.environ.get("ROTA_TEST_RATE", "10/s"),
    retries=8,
    # (answers the test's own site is slow to give on a busy machine must not
    # lower a host's level: these tests watch throttles, rates and recovery)
    adapt=Adaptive(ramp_every=3, pause=1, slow_margin=5),
    timeout=10,
    seen=SeenSet(capacity=10_000, error_rate=0.001) if os.environ.get("ROTA_TEST_SEEN") else None,
)


@crawler.parse
def page(response: Response) -> object:
    """Keep each page's title; follow its links; note that it was parsed."""
    with open(os.environ["ROTA_TEST_PARSED"], "a") as parsed:
        parsed.write(f"{os.getpid()} {response.url}\n")
    title = response.css_first("title")
    return [{"title": title.text() if title else None}, *response.links()]
