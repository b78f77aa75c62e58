"""rota.crawl: a polite crawler run by rota's workers (the ``crawl`` extra).

``Crawler(app, "site", seeds=[...])`` declares the crawl; ``@crawler.parse``
callbacks turn pages into items and links; ``crawler.start()`` sends the
seeds. Politeness is the store's: every fetch carries its host's
concurrency, rate and breaker keys, robots.txt is read once per origin for
the whole cluster, and each host's pace follows how it answers. See
docs/crawling.md.
"""

try:
    import httpx  # noqa: F401
    import protego  # noqa: F401
    import selectolax  # noqa: F401
    import w3lib  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        f"rota.crawl needs the crawl extra ({exc.name} is missing): pip install 'rota[crawl]'"
    ) from exc

from rota.crawl.adapt import Adaptive
from rota.crawl.crawler import Crawler
from rota.crawl.errors import CrawlError, FetchFailed, ParseFailed, Throttled, TryLater
from rota.crawl.response import Link, Response
from rota.crawl.seen import SeenSet

__all__ = [
    "Adaptive",
    "CrawlError",
    "Crawler",
    "FetchFailed",
    "Link",
    "ParseFailed",
    "Response",
    "SeenSet",
    "Throttled",
    "TryLater",
]
