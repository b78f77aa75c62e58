"""The ``ROTA_*`` Scrapy settings, read once and checked: each bad value is
refused with :class:`~rota.errors.InvalidArgument` naming its setting,
whether it came from :func:`rota.crawl.scrapy.settings`, a project's
``settings.py`` or ``scrapy -s NAME=VALUE`` (which gives every value as a
string: ``-s ROTA_PER_HOST=3``, ``-s ROTA_LEASE=2m``, ``-s ROTA_RATE=5``)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rota import _validate
from rota._time import parse_duration
from rota.crawl.scrapy.frontier import Politeness
from rota.crawl.settings import crawl_name
from rota.errors import InvalidArgument
from rota.limits import Rate
from rota.stores import check_url

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings

__all__ = ["Options", "dupefilter_size", "integer", "of", "read", "store_url"]

_NUMBER = re.compile(r"\d+(?:\.\d+)?")


@dataclass(frozen=True, slots=True)
class Options:
    """What the scheduler is told by the ``ROTA_*`` settings (``url`` None:
    unset; ``name`` and ``queue`` are the crawl's, defaults applied)."""

    url: str | None
    name: str
    queue: str
    politeness: Politeness
    lease: float
    unique_for: float
    filter_start: bool
    poll: float
    dupefilter_size: int


def of(crawler: Crawler) -> Options:
    """The ``ROTA_*`` settings of ``crawler``'s crawl (:func:`read`)."""
    spider = getattr(crawler, "spider", None)  # made before the engine; None in a bare Crawler
    return read(crawler.settings, getattr(spider or crawler.spidercls, "name", None))


def read(settings: BaseSettings, spider: object) -> Options:
    """The ``ROTA_*`` settings of a crawl of the spider named ``spider``
    (see the scheduler's docstring for each one's meaning and default, and
    :class:`rota.crawl.scrapy.DupeFilter`'s for ``ROTA_DUPEFILTER_SIZE``).
    The crawl's name (``ROTA_NAME``, else the spider's) follows the rules of
    a :class:`~rota.crawl.Crawler`'s name; ``ROTA_QUEUE`` those of a queue.
    A setting given empty is refused, not taken for unset, but for
    ``ROTA_URL`` and ``ROTA_RATE`` (``-s ROTA_RATE=`` sets no rate)."""
    per_host = integer(settings, "ROTA_PER_HOST", 2)
    burst = integer(settings, "ROTA_BURST", 1)
    url = _text(settings, "ROTA_URL")
    name = _crawl_name(settings, spider)
    queue = settings.get("ROTA_QUEUE")
    return Options(
        url=None if url is None else store_url(url, "ROTA_URL"),
        name=name,
        queue=f"scrapy-{name}" if queue is None else _validate.name(queue, "ROTA_QUEUE"),
        politeness=Politeness(per_host, _rate(settings, burst), burst),
        lease=_duration(settings, "ROTA_LEASE", 30.0, positive=True),
        unique_for=_duration(settings, "ROTA_UNIQUE_FOR", _validate.MAX_DURATION),
        filter_start=_boolean(settings, "ROTA_FILTER_START", True),
        poll=max(0.01, _duration(settings, "ROTA_POLL", 0.2, positive=True)),
        dupefilter_size=dupefilter_size(settings),
    )


def dupefilter_size(settings: BaseSettings) -> int:
    """``ROTA_DUPEFILTER_SIZE``: how many fingerprints a process remembers."""
    return integer(settings, "ROTA_DUPEFILTER_SIZE", 100_000)


def store_url(value: object, what: str) -> str:
    """``value`` if it is a well-formed store URL; :class:`InvalidArgument`
    naming ``what`` if not."""
    if not isinstance(value, str):
        raise InvalidArgument(f"{what} must be a store URL (a string), not {value!r}")
    try:
        check_url(value)
    except InvalidArgument as exc:
        raise InvalidArgument(f"{what}: {exc}") from None
    return value


def integer(settings: BaseSettings, name: str, default: int) -> int:
    """The setting ``name``: an integer from 1 to :data:`rota._validate.MAX_LIMIT`."""
    value = settings.get(name)
    if value is None:
        return default
    if isinstance(value, str):
        try:
            value = int(value.strip())
        except ValueError:
            raise InvalidArgument(f"{name} must be an integer, not {value!r}") from None
    return _validate.integer(value, name, 1, _validate.MAX_LIMIT)


def _duration(
    settings: BaseSettings, name: str, default: float, *, positive: bool = False
) -> float:
    value = settings.get(name)
    return default if value is None else parse_duration(value, what=name, positive=positive)


def _rate(settings: BaseSettings, burst: int) -> float | str | None:
    """``ROTA_RATE``: a number of requests a second (``5``, or ``"5"`` from
    ``-s``) or a string like ``"5/s"``; None when unset."""
    value = _text(settings, "ROTA_RATE")
    if value is None:
        return None
    if not isinstance(value, int | float | str):
        raise InvalidArgument(f"ROTA_RATE must be a number or a string like '5/s', not {value!r}")
    spec = float(value) if isinstance(value, str) and _NUMBER.fullmatch(value.strip()) else value
    try:
        return Rate(spec, burst=burst).spec
    except InvalidArgument as exc:
        raise InvalidArgument(f"ROTA_RATE: {exc}") from None


def _boolean(settings: BaseSettings, name: str, default: bool) -> bool:
    try:
        return settings.getbool(name, default)
    except ValueError:
        raise InvalidArgument(
            f"{name} must be True or False (or 1 or 0), not {settings.get(name)!r}"
        ) from None


def _text(settings: BaseSettings, name: str) -> object:
    """The setting ``name``, None when unset or empty."""
    value = settings.get(name)
    return None if value is None or value == "" else value


def _crawl_name(settings: BaseSettings, spider: object) -> str:
    """``ROTA_NAME``, else the spider's name, if it can name a crawl."""
    value = settings.get("ROTA_NAME")
    if value is not None:
        return crawl_name(value, "ROTA_NAME")
    return crawl_name(spider, "the spider's name (the crawl's, ROTA_NAME being unset)")
