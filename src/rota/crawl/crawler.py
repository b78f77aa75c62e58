"""The :class:`Crawler`: a polite, cluster-wide crawl declared in a few lines."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar, overload

from rota import Breaker
from rota.app import App
from rota.crawl.adapt import Adaptive
from rota.crawl.jobs import Callback, CrawlJobs
from rota.crawl.response import Response
from rota.crawl.seen import SeenFilter, SeenSet
from rota.crawl.settings import DEFAULT_MAX_BYTES, DEFAULT_USER_AGENT, Settings, seed_urls
from rota.crawl.urls import host_key, origin
from rota.errors import InvalidArgument

if TYPE_CHECKING:
    from rota.task import JobHandle, Task

__all__ = ["Crawler"]

ParseFn = TypeVar("ParseFn", bound=Callable[[Response], object])


class Crawler:
    """A crawl run by the app's workers: ``Crawler(app, "site", seeds=[...])``.

    Declaring it registers its tasks on ``app`` (``site.fetch``,
    ``site.admit``, ``site.robots``, ``site.recrawl``, ``site.resume``, all
    on ``queue``), so workers that load the app run it; :meth:`start` sends
    the seeds. Pages are fetched by ``site.fetch`` jobs, whose results are
    the items (``rota jobs export --task site.fetch``).

    - ``seeds``: where the crawl starts (an absolute http(s) URL, or an
      iterable of them; depth 0);
    - ``allow`` / ``deny``: regular expressions a followed link must match
      (one of) / must not match (any);
    - ``domains``: host names whose hosts are followed (subdomains too);
      default: only the seeds' hosts;
    - ``max_depth``: links more than this many hops from a seed are not
      followed (default: no limit); a redirect is no hop (its target has
      the depth of the page that redirected), and at most five redirects in
      a row are followed;
    - ``recrawl``: the recrawl age (seconds or ``"1d"``): each page is
      fetched again (conditionally) once it is over, by a recrawl job its
      fetch sends, never by a link found again;
      None (the default): each page is fetched once;
    - ``per_host``, ``rate``, ``burst``: at most ``per_host`` fetches of a
      host at once and ``rate`` a second (``"2/s"``, ``"30/m"``, a number),
      across the cluster; a host's ``Crawl-delay`` slows its rate further,
      and its fetches then come one at a time, without bursts;
    - ``breaker``: a :class:`rota.Breaker` without key, applied per host;
    - ``retries``: attempts after the first for a fetch that fails;
    - ``adapt``: True (default), False, or :class:`~rota.crawl.Adaptive`
      settings: each host's level of concurrency follows how it answers
      (see :mod:`rota.crawl.adapt`);
    - ``user_agent`` (printable ASCII, no control characters), ``timeout``,
      ``max_bytes`` (largest body read), ``robots_ttl`` (how long a
      robots.txt is used), ``queue`` and ``priority`` of the fetch jobs;
    - ``seen``: a :class:`~rota.crawl.SeenSet` (a Bloom filter shared by the
      cluster, in the app's Redis or SQLite store) that discovered links
      pass first: one already in it is not sent, and the store holds a
      fetch's unique key only while it is pending or running (not for
      good), so a URL costs the store nothing once fetched. None (the
      default): exact dedup only, the store holding each fetched URL's
      unique key for good. See :mod:`rota.crawl.seen`.

    Every argument is checked here: a bad one raises
    :class:`~rota.errors.InvalidArgument` and registers nothing.
    """

    def __init__(
        self,
        app: App,
        name: str,
        *,
        seeds: str | Iterable[str] = (),
        allow: str | Iterable[str] = (),
        deny: str | Iterable[str] = (),
        domains: Iterable[str] | None = None,
        max_depth: int | None = None,
        recrawl: float | str | None = None,
        queue: str = "crawl",
        priority: int = 0,
        per_host: int = 2,
        rate: str | float = "1/s",
        burst: int = 1,
        breaker: Breaker | None = None,
        retries: int = 5,
        adapt: bool | Adaptive = True,
        user_agent: str = DEFAULT_USER_AGENT,
        timeout: float | str = 30.0,
        max_bytes: int = DEFAULT_MAX_BYTES,
        robots_ttl: float | str = "1d",
        seen: SeenSet | None = None,
    ) -> None:
        if not isinstance(app, App):
            raise InvalidArgument(f"a crawler needs a rota.App, not {app!r}")
        if seen is not None and not isinstance(seen, SeenSet):
            raise InvalidArgument(f"seen takes a rota.crawl.SeenSet or None, not {seen!r}")
        self.app = app
        self.settings = Settings.build(
            name,
            seeds=seeds,
            allow=allow,
            deny=deny,
            domains=domains,
            max_depth=max_depth,
            recrawl=recrawl,
            queue=queue,
            priority=priority,
            per_host=per_host,
            rate=rate,
            burst=burst,
            breaker=breaker,
            retries=retries,
            user_agent=user_agent,
            timeout=timeout,
            max_bytes=max_bytes,
            robots_ttl=robots_ttl,
            retention=app.retention,
            adapt=adapt,
        )
        taken = [f"{name}.{job}" for job in _JOBS if f"{name}.{job}" in app.tasks]
        if taken:
            raise InvalidArgument(f"the app already has a task named {taken[0]!r}")
        self._seen = SeenFilter(seen, app, name) if seen is not None else None
        self._callbacks: list[Callback] = []
        self._jobs = CrawlJobs(app, self.settings, self._callbacks, self._seen)

    def __repr__(self) -> str:
        return f"<rota.crawl.Crawler {self.name} seeds={len(self.settings.seeds)}>"

    @property
    def name(self) -> str:
        """The crawler's name, the prefix of its task names."""
        return self.settings.name

    @property
    def fetch_task(self) -> Task[..., dict[str, Any]]:
        """The task whose jobs fetch pages; their results hold the items."""
        return self._jobs.fetch_task

    @overload
    def parse(self, fn: ParseFn, /) -> ParseFn: ...

    @overload
    def parse(self, fn: None = None, /, *, match: str) -> Callable[[ParseFn], ParseFn]: ...

    def parse(
        self, fn: ParseFn | None = None, /, *, match: str | None = None
    ) -> ParseFn | Callable[[ParseFn], ParseFn]:
        """Register a parse callback: ``@crawler.parse``, or
        ``@crawler.parse(match=r"/products/")`` for the pages whose URL
        matches a regular expression (``re.search``).

        A callback gets each successfully fetched page whose content changed
        since its last fetch (a :class:`~rota.crawl.Response`) and returns,
        or yields, items (dicts of JSON values, kept in order as the fetch
        job's result) and links to follow (:class:`~rota.crawl.Link`, from
        ``response.follow(href)`` or ``response.links()``). Callbacks run in
        the order they were registered. A crawler without callbacks follows
        every link of every page and keeps no items.
        """
        pattern = _pattern(match)

        def register(func: ParseFn) -> ParseFn:
            if not callable(func):
                raise InvalidArgument(f"parse takes a function, not {func!r}")
            self._callbacks.append(Callback(func, pattern))
            return func

        return register(fn) if fn is not None else register

    def start(self, urls: str | Iterable[str] | None = None) -> list[JobHandle[Any]]:
        """Send the seeds (or ``urls``) to be fetched: an admit job per
        origin (per 500 URLs), which reads its robots.txt and sends the
        allowed pages.
        Seeds fetched once are not sent again (their recrawl jobs fetch them
        again after the age), so starting twice is harmless (with a
        seen-set, only the seeds new to it are sent: it holds them for good). Returns the
        admit jobs' handles; :class:`InvalidArgument` for a URL that is not an
        absolute http(s) URL, or whose host is outside the crawl's scope (not
        a seed's host, nor under ``domains``), or for an empty ``urls``,
        before anything is sent."""
        seeds = self.settings.seeds if urls is None else self._in_scope(seed_urls(urls, "urls"))
        if not seeds and urls is not None:
            raise InvalidArgument(_no_urls(self.name, bool(self.settings.seeds)))
        if not seeds:
            raise InvalidArgument(
                f"crawler {self.name!r} has no seeds: pass seeds= to Crawler (or domains=, "
                "then start(urls=[...]))"
            )
        if self._seen is not None:
            seeds = tuple(self._seen.new(seeds))
        by_origin: dict[str, list[tuple[str, int, int]]] = {}
        for url in seeds:
            by_origin.setdefault(origin(url), []).append((url, 0, 0))
        frontier = self._jobs.frontier
        return [handle for key, pairs in by_origin.items() for handle in frontier.admit(key, pairs)]

    def _in_scope(self, urls: tuple[str, ...]) -> tuple[str, ...]:
        """``urls``, each of a host in the crawl's scope (a seed's host, or
        under ``domains``); :class:`InvalidArgument` for the first that is not,
        whose links the crawl would never follow."""
        scope = self.settings.scope
        for url in urls:
            if not scope.takes_host(url):
                raise InvalidArgument(
                    f"urls: {url} is outside crawl {self.name!r}: its host {host_key(url)} is "
                    "not a seed's, nor under domains=, so none of its links would be followed; "
                    "add a URL of the host to seeds= (or its domain to domains=)"
                )
        return urls


_JOBS = ("fetch", "admit", "recrawl", "robots", "resume")


def _no_urls(name: str, seeded: bool) -> str:
    """Why ``start(urls)`` refuses an empty ``urls`` of crawler ``name``."""
    text = f"urls is empty: give start() at least one URL of crawler {name!r} to fetch"
    return text + (", or none at all (start()) to send its seeds" if seeded else "")


def _pattern(match: str | None) -> re.Pattern[str] | None:
    if match is None:
        return None
    if not isinstance(match, str) or not match:
        raise InvalidArgument(f"match takes a regular expression (a string), not {match!r}")
    try:
        return re.compile(match)
    except re.error as exc:
        raise InvalidArgument(f"match pattern {match!r} is not valid: {exc}") from None
