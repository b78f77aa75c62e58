"""Scrapy's scheduler and dupefilter on rota's store.

``SCHEDULER = "rota.crawl.scrapy.Scheduler"`` keeps a spider's requests as
jobs in the app's store (:mod:`rota.crawl.scrapy.frontier`): every Scrapy
process, on any machine, whose ``ROTA_URL`` names the same store shares one
frontier, each request is sent once (its fingerprint is its unique key),
and :meth:`Scheduler.next_request` claims from the store, which holds each
host's concurrency and rate for all of them at once.

A claimed request is in flight until :class:`rota.crawl.scrapy.Finish` (or
a request that follows it, a redirect or a retry) ends its job; the claim's
lease is renewed meanwhile, and a process that dies lets it run out, so
the request goes back to the queue for another process.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from rota import App
from rota.crawl.scrapy import options, stored
from rota.crawl.scrapy.frontier import Claim, SharedFrontier
from rota.crawl.scrapy.stored import PRIVATE, UnstorableRequest

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.crawler import Crawler

__all__ = ["DupeFilter", "Scheduler", "request_done"]

log = logging.getLogger(__name__)

#: The signal :class:`rota.crawl.scrapy.Finish` sends when a claimed
#: request is done with (``request``, and ``status`` or ``error``).
request_done = object()


class Scheduler:
    """A Scrapy scheduler whose queue is rota's store (see the module
    docstring). Its settings: ``ROTA_URL`` (the store; else the
    ``ROTA_URL`` environment variable, else ``sqlite:///rota.db``),
    ``ROTA_NAME`` (the crawl; the spider's name), ``ROTA_QUEUE``
    (``scrapy-NAME``), ``ROTA_PER_HOST`` (2), ``ROTA_RATE`` (none, e.g.
    ``"5/s"``), ``ROTA_BURST`` (1), ``ROTA_LEASE`` (30 s),
    ``ROTA_UNIQUE_FOR`` (seconds a fingerprint is held after its request is
    done; for good), ``ROTA_FILTER_START`` (True: start requests are sent
    once, though Scrapy makes them ``dont_filter``) and ``ROTA_POLL`` (0.2 s).
    A bad value of any of them is refused (:class:`~rota.errors.InvalidArgument`
    naming the setting) before the spider opens, by the
    :class:`~rota.crawl.scrapy.Finish` middleware, which the crawl needs anyway."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.settings = crawler.settings
        self.stats = crawler.stats
        self.options = options.of(crawler)
        self.poll = self.options.poll
        self.filter_start = self.options.filter_start
        self.spider: Spider | None = None
        self.frontier: SharedFrontier | None = None
        self.df: Any = None
        self._held: dict[str, Claim] = {}
        self._quiet_until = 0.0
        self._pending: tuple[float, bool] = (0.0, True)
        self._loops: list[Any] = []

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Scheduler:
        """The scheduler of ``crawler`` (Scrapy's way to build it)."""
        return cls(crawler)

    # -- Scrapy's scheduler interface ------------------------------------------

    def open(self, spider: Spider) -> None:
        """Connect to the store and start renewing this process's claims."""
        from scrapy.utils.misc import build_from_crawler, load_object

        s, o = self.settings, self.options
        self.spider = spider
        app = App(o.url, lease=o.lease)
        try:
            app.store.now()  # a store that cannot be reached fails the start: exit code 1
        except BaseException:
            app.close()
            raise
        self.frontier = SharedFrontier(
            app,
            o.name,
            queue=o.queue,
            politeness=o.politeness,
            unique_for=o.unique_for,
            concurrency=s.getint("CONCURRENT_REQUESTS"),
        )
        self.df = build_from_crawler(load_object(s["DUPEFILTER_CLASS"]), self.crawler)
        self.df.open()
        self.crawler.signals.connect(self._done, signal=request_done)
        self._loop(self._renew, max(0.2, o.lease / 4))
        self._loop(self._wake, self.poll)

    def close(self, reason: str) -> None:
        """Give back the requests still held (another process takes them up),
        and leave the store."""
        for loop in self._loops:
            if loop.running:
                loop.stop()
        if self.frontier is not None:
            self.frontier.release(list(self._held.values()))
            self._held.clear()
            self.frontier.close()
            self.frontier.app.close()
        if self.df is not None:
            self.df.close(reason)

    def has_pending_requests(self) -> bool:
        """Whether the crawl has requests queued or in flight in any process
        (asked of the store at most once per ``ROTA_POLL``)."""
        if self._held:
            return True
        at, pending = self._pending
        if time.monotonic() - at >= self.poll:
            assert self.frontier is not None
            pending = self.frontier.pending()
            self._pending = (time.monotonic(), pending)
        return pending

    def enqueue_request(self, request: Request) -> bool:
        """Send ``request`` to the store unless its fingerprint is there
        already (``dont_filter`` requests always go, start requests
        excepted). A request that follows one this process holds (a
        redirect, a retry) ends that one's job. A request that cannot be
        stored (:class:`~rota.crawl.scrapy.UnstorableRequest`) is logged as
        an error, counted (``rota/unstorable``) and dropped."""
        assert self.frontier is not None
        parent = self._held.pop(str(request.meta.get(PRIVATE)), None)
        try:
            data = stored.encode(request, self.spider)
        except UnstorableRequest as exc:
            log.error("%s: not sent", exc)
            self.stats.inc_value("rota/unstorable")
            self._end(parent, request)
            return False
        key = None
        if self._filters(request):
            key = self.crawler.request_fingerprinter.fingerprint(request).hex()
            if self.df.request_seen(request):
                self._filtered(request)
                self._end(parent, request)
                return False
        sent = self.frontier.send(data, priority=request.priority, key=key)
        self._end(parent, request)
        if not sent:
            self._filtered(request)
            return False
        self.stats.inc_value("scheduler/enqueued/rota")
        self._pending = (time.monotonic(), True)
        return True

    def next_request(self) -> Request | None:
        """Claim the next request the store allows, or None (then the store
        is not asked again for ``ROTA_POLL`` seconds, or until one of this
        process's requests is done)."""
        assert self.frontier is not None
        if time.monotonic() < self._quiet_until:
            return None
        claim = self.frontier.claim()
        if claim is None:
            self._quiet_until = time.monotonic() + self.poll
            return None
        try:
            request = stored.decode(claim.data, self.spider)
        except ValueError as exc:  # its callback is gone from the spider
            self.frontier.finish(claim, result=None, error=f"cannot rebuild the request: {exc}")
            return None
        request.meta[PRIVATE] = claim.job_id
        self._held[claim.job_id] = claim
        self.stats.inc_value("scheduler/dequeued/rota")
        return request

    # -- claims ----------------------------------------------------------------

    def _filters(self, request: Request) -> bool:
        """Whether ``request`` is sent once: unless ``dont_filter``, except
        start requests, which every process of the crawl sends (Scrapy
        makes them ``dont_filter``), unless ``ROTA_FILTER_START`` is False.
        A retry of a start request (which follows a claim) is no start."""
        if not request.dont_filter:
            return True
        fresh = PRIVATE not in request.meta
        return fresh and bool(request.meta.get("is_start_request")) and self.filter_start

    def _done(self, request: Request, status: int | None = None, error: str | None = None) -> None:
        claim = self._held.pop(str(request.meta.get(PRIVATE)), None)
        if claim is None or self.frontier is None:
            return
        result = {"url": request.url, "status": status}
        self.frontier.finish(claim, result=result, error=error)
        self._quiet_until = 0.0  # its host's slot is free: a claim may succeed now

    def _end(self, parent: Claim | None, follow: Request) -> None:
        if parent is not None and self.frontier is not None:
            self.frontier.finish(parent, result={"followed_by": follow.url}, error=None)
            self._quiet_until = 0.0

    def _filtered(self, request: Request) -> None:
        self.df.log(request, self.spider)

    def _renew(self) -> None:
        assert self.frontier is not None
        try:
            for lost in self.frontier.renew(list(self._held.values())):
                log.warning("lost the lease of %s: another process has it", lost.data["url"])
                self._held.pop(lost.job_id, None)
        except Exception:
            log.exception("could not renew the leases of %d request(s)", len(self._held))

    def _wake(self) -> None:
        """Have the engine ask for requests again (a claim may succeed now)
        and see whether the crawl is over (the last request may have ended
        in another process): on its own it looks only every 5 s."""
        if time.monotonic() < self._quiet_until:
            return
        slot = getattr(self.crawler.engine, "_slot", None)
        nextcall = getattr(slot, "nextcall", None)
        if nextcall is not None:
            nextcall.schedule()

    def _loop(self, fn: Any, interval: float) -> None:
        try:
            from scrapy.utils.asyncio import create_looping_call
        except ImportError:  # Scrapy before 2.14: the reactor's
            from twisted.internet.task import LoopingCall as create_looping_call  # type: ignore[assignment]

        loop = create_looping_call(fn)
        loop.start(interval, now=False)
        self._loops.append(loop)


class DupeFilter:
    """Scrapy's dupefilter for :class:`Scheduler`: each process remembers the
    fingerprints it has sent or seen refused (the last ``ROTA_DUPEFILTER_SIZE``,
    100,000 by default), so a link found again costs no store round trip;
    the store decides for the others, atomically for every process."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.size = options.dupefilter_size(crawler.settings)
        self._seen: OrderedDict[bytes, None] = OrderedDict()
        self._logged = False

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> DupeFilter:
        """The dupefilter of ``crawler`` (Scrapy's way to build it)."""
        return cls(crawler)

    def open(self) -> None:
        """Nothing to open: the store is the scheduler's."""

    def close(self, reason: str) -> None:
        """Forget what this process remembered."""
        self._seen.clear()

    def request_seen(self, request: Request) -> bool:
        """True if this process has met ``request``'s fingerprint already;
        else remember it and say False (the store then decides)."""
        fp = self.crawler.request_fingerprinter.fingerprint(request)
        if fp in self._seen:
            self._seen.move_to_end(fp)
            return True
        self._seen[fp] = None
        if len(self._seen) > self.size:
            self._seen.popitem(last=False)
        return False

    def log(self, request: Request, spider: Spider | None) -> None:
        """Count a filtered request (``dupefilter/filtered``); log the first."""
        if not self._logged:
            log.debug("Filtered duplicate request: %s (no more duplicates are logged)", request)
            self._logged = True
        self.crawler.stats.inc_value("dupefilter/filtered")
