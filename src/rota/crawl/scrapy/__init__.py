"""Scrapy on rota (the ``scrapy`` extra): one frontier in rota's store for
every Scrapy process on every machine, with rota's per-host politeness.

In the project's ``settings.py`` (or a spider's ``custom_settings``)::

    from rota.crawl.scrapy import settings

    globals().update(settings("redis://10.0.0.5:6379/0", per_host=2, rate="5/s"))

which sets ``SCHEDULER`` (:class:`Scheduler`), ``DUPEFILTER_CLASS``
(:class:`DupeFilter`), the :class:`Finish` middleware and the ``ROTA_*``
settings. See docs/crawling.md, "Scrapy".
"""

from __future__ import annotations

try:
    import scrapy  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        f"rota.crawl.scrapy needs the scrapy extra ({exc.name} is missing): "
        "pip install 'rota[scrapy]'"
    ) from exc

from typing import Any

from rota import Rate, _validate
from rota._time import parse_duration
from rota.crawl.scrapy.frontier import host_of
from rota.crawl.scrapy.middleware import Finish
from rota.crawl.scrapy.options import store_url
from rota.crawl.scrapy.scheduler import DupeFilter, Scheduler
from rota.crawl.scrapy.stored import UnstorableRequest
from rota.crawl.settings import crawl_name

__all__ = ["DupeFilter", "Finish", "Scheduler", "UnstorableRequest", "host_of", "settings"]


def settings(
    url: str | None = None,
    *,
    name: str | None = None,
    per_host: int = 2,
    rate: float | str | None = None,
    burst: int = 1,
    lease: float | str = 30.0,
) -> dict[str, Any]:
    """The Scrapy settings that put a spider's requests in rota's store at
    ``url`` (else the ``ROTA_URL`` environment variable, else
    ``sqlite:///rota.db``): at most ``per_host`` requests of a host at once
    and ``rate`` a second (bursts of ``burst``) across every process, a
    claim's lease of ``lease`` (seconds, or a duration such as ``"2m"``,
    given to Scrapy in seconds). ``name`` is the crawl's (the
    spider's name by default): processes that share it share a frontier.
    A bad argument raises :class:`~rota.errors.InvalidArgument` naming it,
    here rather than inside Scrapy."""
    _check(url, name, per_host, rate, burst)
    values: dict[str, Any] = {
        "SCHEDULER": "rota.crawl.scrapy.Scheduler",
        "DUPEFILTER_CLASS": "rota.crawl.scrapy.DupeFilter",
        "SPIDER_MIDDLEWARES": {"rota.crawl.scrapy.Finish": 10},
        "DOWNLOADER_MIDDLEWARES": {"rota.crawl.scrapy.Finish": 50},
        "ROTA_PER_HOST": per_host,
        "ROTA_BURST": burst,
        "ROTA_LEASE": parse_duration(lease, what="lease", positive=True),
    }
    if url is not None:
        values["ROTA_URL"] = url
    if name is not None:
        values["ROTA_NAME"] = name
    if rate is not None:
        values["ROTA_RATE"] = rate
    return values


def _check(
    url: str | None, name: str | None, per_host: int, rate: float | str | None, burst: int
) -> None:
    """Refuse a bad argument of :func:`settings` with the validators a
    :class:`~rota.crawl.Crawler` and an :class:`~rota.App` use."""
    if url is not None:
        store_url(url, "url")
    if name is not None:
        crawl_name(name, "name")
    _validate.integer(per_host, "per_host", 1, _validate.MAX_LIMIT)
    _validate.integer(burst, "burst", 1, _validate.MAX_LIMIT)
    if rate is not None:
        Rate(rate, burst=burst)
