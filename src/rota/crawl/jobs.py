"""The jobs of a crawl, registered as tasks of the app.

For a crawler named ``site``:

- ``site.fetch(url, depth, previous[, redirects])``: one page. Carries its host's
  politeness keys (see :mod:`rota.crawl.frontier`); reads robots.txt first,
  snoozes if its host was paused since it was claimed, else fetches
  (conditionally when ``previous`` has validators), runs the parse
  callbacks on a changed page, sends its links, keeps the items as its
  result and schedules the page's recrawl;
- ``site.admit(origin, urls)``: links of an origin whose robots.txt the
  sender did not know: reads it, then sends the allowed ones;
- ``site.robots(origin)``: the one fetch of an origin's robots.txt per
  ``robots_ttl`` (see :mod:`rota.crawl.hostrules`);
- ``site.recrawl(url, depth, previous, after[, redirects])``: sent by a
  fetch to run once the recrawl age is over; sends the page's next fetch
  with the validators of the last one (and the redirects that led to it);
- ``site.resume(host, level)``: ends a host's pause (see
  :mod:`rota.crawl.pacing`).

Jobs other than fetches and robots carry no host limits, so they run while
a host is paused or busy; they have higher priorities than fetches (robots
and resume highest), so a host's robots.txt is read before its pages.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import random
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from re import Pattern
from typing import Any
from urllib.parse import urlsplit

import httpx

from rota import Limit, Rate, _validate
from rota.app import App
from rota.context import current_job
from rota.crawl import fetching, outcomes
from rota.crawl.adapt import parse_retry_after
from rota.crawl.errors import FetchFailed, ParseFailed, Throttled, TryLater
from rota.crawl.fetching import MAX_REDIRECTS
from rota.crawl.frontier import Frontier
from rota.crawl.hostrules import RobotsBook
from rota.crawl.pacing import Pacer
from rota.crawl.response import Link, Response
from rota.crawl.robots import Rules
from rota.crawl.seen import SeenFilter
from rota.crawl.settings import Settings
from rota.crawl.urls import MAX_URL_LENGTH, host_key, origin, resolve
from rota.errors import JobFailed, JobTimeout
from rota.models import JobState

__all__ = ["Callback", "CrawlJobs"]

log = logging.getLogger("rota.crawl")

#: How long the store holds a fetched URL's unique key without a seen-set: for
#: good, so a page found again is never sent again (its recrawls fetch it).
NEVER = _validate.MAX_DURATION
#: Retries of the jobs that send pages (admit, recrawl); their waits for a
#: robots.txt or for the end of a hold are snoozes, which use none.
_PATIENT = {"retries": 20, "backoff": (1.0, 600.0)}
#: How long a recrawl waits for the last fetch of its page to let go of it.
_HOLD_WAIT = 30.0
#: How long a fetch claimed before its host's pause waits (the store then
#: holds it until the pause is over).
_PAUSED_WAIT = 1.0

#: How many times a throttle tries to send its host's resume job, and how
#: long it waits each time for one that is running to end.
_RESUME_TURNS = 5
_RESUME_WAIT = 5.0


@dataclass(frozen=True, slots=True)
class Callback:
    """A parse callback and the URLs it is for (None: every page)."""

    fn: Callable[[Response], object]
    match: Pattern[str] | None = None


def url_key(url: str) -> str:
    """The unique value of a page's URL (a hash of a very long one)."""
    if len(url) <= 160:
        return url
    return "blake2b:" + hashlib.blake2b(url.encode(), digest_size=20).hexdigest()


def _after_key(url: str, after: str) -> str:
    """The unique value of a recrawl job: one per page and last fetch."""
    return f"{url_key(url)}@{after}"


def _origin_host(origin: str) -> str:
    return urlsplit(origin).netloc


class CrawlJobs:
    """A crawler's tasks and the state each process keeps for them."""

    def __init__(
        self,
        app: App,
        settings: Settings,
        callbacks: list[Callback],
        seen: SeenFilter | None = None,
    ) -> None:
        self.app = app
        self.settings = s = settings
        self.callbacks = callbacks
        self.clients = fetching.Clients(s.user_agent, s.timeout)
        self.pacer = Pacer(app, s.per_host, s.adapt, self._send_resume)
        self.robots = RobotsBook(s, self.clients, self.pacer)
        self.frontier = Frontier(s, self.robots, seen)
        app.on_worker_start(self.clients.open)
        app.on_worker_stop(self.clients.close)
        if seen is not None:
            app.on_worker_stop(seen.close)
        name, queue, p = s.name, s.queue, s.priority
        self.fetch_task = app.task(
            name=f"{name}.fetch",
            queue=queue,
            priority=p,
            retries=s.retries,
            backoff=(1.0, 300.0),
            unique=url_key,
            # with a seen-set, it keeps found-again links out: the store then
            # holds a URL's unique key only while its fetch is pending or running
            unique_for=None if seen is not None else NEVER,
            no_retry_on=ParseFailed,
        )(self.fetch)
        self.admit_task = app.task(name=f"{name}.admit", queue=queue, priority=p + 1, **_PATIENT)(
            self.admit
        )
        self.recrawl_task = app.task(
            name=f"{name}.recrawl", queue=queue, priority=p + 1, unique=_after_key, **_PATIENT
        )(self.recrawl)
        self.robots.task = app.task(
            name=f"{name}.robots",
            queue=queue,
            priority=p + 2,
            retries=3,
            backoff=(2.0, 60.0),
            # one of the host's fetches: held while the host is paused, as pages are
            concurrency=Limit(_origin_host, s.per_host),
            rate=Rate(s.rate, burst=s.burst, key=_origin_host),
            unique=lambda origin: origin,
            unique_for=s.robots_ttl,
        )(self.robots.fetch)
        self.resume_task = app.task(
            name=f"{name}.resume",
            queue=queue,
            priority=p + 2,
            retries=10,
            backoff=(1.0, 60.0),
            unique=lambda host: host,
        )(self.pacer.resume)
        self.frontier.fetch_task = self.fetch_task
        self.frontier.admit_task = self.admit_task

    # -- jobs ----------------------------------------------------------------

    def fetch(
        self,
        url: str,
        depth: int = 0,
        previous: dict[str, Any] | None = None,
        redirects: int = 0,
    ) -> dict[str, Any]:
        """Fetch one page (the fetch job): see the module's docstring. A seed is
        at depth 0 however it was sent: a link from another page can send it
        first while the seed's own admit job still waits for robots.txt, and
        the seed's send is then a duplicate (``max_depth`` would cut its pages).
        ``redirects`` counts the redirects in a row that led to the page."""
        if self.settings.is_seed(url):
            depth = 0
        rules = self.robots.rules(origin(url))
        result: dict[str, Any] = {"url": url, "depth": depth}
        if not rules.allows(url):
            return result | {"skipped": "disallowed by robots.txt"}
        host, own_rate = host_key(url), self.settings.host_rate(rules)
        if self.pacer.paused(host):  # since this job was claimed: not a request more
            raise TryLater(f"{host} is paused", _PAUSED_WAIT * (1.0 + random.random()))
        try:
            got = fetching.get(
                self.clients.get(),
                url,
                max_bytes=self.settings.max_bytes,
                headers=fetching.conditional_headers(previous),
            )
        except httpx.HTTPError as exc:
            self.pacer.record(host, None, 0.0, own_rate)
            kind = outcomes.network_kind(exc)
            raise FetchFailed(kind, f"{url}: {type(exc).__name__}: {exc}") from exc
        if got.status in (429, 503):
            asked = parse_retry_after(got.headers.get("retry-after"), time.time())
            pause = self.pacer.throttle(host, asked, own_rate)
            raise Throttled(f"{url} answered {got.status}: {host} is paused for {pause:.1f} s")
        self.pacer.record(host, got.status, got.seconds, own_rate)
        if got.status >= 500:
            raise FetchFailed("5xx", f"{url} answered {got.status}")
        answer = self._answer(url, depth, previous, rules, got, redirects)
        return result | {"status": got.status} | answer

    def admit(self, origin_: str, urls: list[list[Any]]) -> dict[str, Any]:
        """Send the pages of ``urls`` (``[url, depth]``, or ``[url, depth,
        redirects]`` for a redirect's target, all of ``origin_``) that its
        robots.txt allows (the admit job)."""
        rules = self.robots.rules(origin_)
        pairs = [(str(url), int(depth), int(rest[0]) if rest else 0) for url, depth, *rest in urls]
        calls = self.frontier.allowed(rules, pairs)
        handles = self.frontier.fetch(host_key(origin_), rules, calls)
        new = sum(not h.duplicate for h in handles)
        return {"origin": origin_, "sent": new, "disallowed": len(pairs) - len(calls)}

    def recrawl(
        self,
        url: str,
        depth: int,
        previous: dict[str, Any] | None,
        after: str,
        redirects: int = 0,
    ) -> dict[str, Any]:
        """The recrawl job of ``url``: sent by its last fetch, job ``after``,
        to run once the recrawl age is over; sends the page's next fetch with
        the validators of that one and the count of ``redirects`` in a row
        that led to the page (so a redirect chain stops at the same page in
        every round). Links found again never send a fetched
        page (the store holds its URL for good, or the seen-set has it), so
        this fetch goes round the URL's unique key (it has one of its own,
        per recrawl job); with a seen-set the key is held only while a fetch
        is pending, and one sent meanwhile (a seed sent again) takes this
        one's place."""
        s = self.settings
        if not (s.is_seed(url) or s.scope.follows(url)):
            return {"url": url, "skipped": "no longer in the crawl"}
        rules = self.robots.rules(origin(url))
        if not rules.allows(url):
            return {"url": url, "skipped": "disallowed by robots.txt"}
        task = self.frontier.fetch_task_for(host_key(url), rules)
        if self.frontier.seen is None:
            # keyed by this job, so running it again (after a lost lease) sends nothing
            task = task.options(unique=_after_key(url, after), unique_for=s.recrawl)
        handle = task.send(url, depth, previous, redirects)
        if handle.duplicate and handle.id == after:
            raise TryLater(f"the last fetch of {url} ({after}) still holds it", _HOLD_WAIT)
        return {"url": url, "fetch": handle.id, "duplicate": handle.duplicate}

    def _send_resume(
        self, host: str, level: int, rate: float | None, delay: float, started: bool
    ) -> None:
        """Send the job that ends ``host``'s pause in ``delay`` seconds. A host
        has one resume job at a time (its unique key). A pause that ``started``
        replaces a pending one (left by a pause ended meanwhile, by hand); a
        throttle during a pause moves the pending one later when it asks for
        longer. A resume job running now has just ended the last pause: this
        one is sent once it is done. A host found paused with no resume job
        pending is held at 0 by hand (``rota limits set HOST 0``): it stays
        so, with no resume job, until an operator lifts it."""
        store = self.app.store
        until = store.now() + delay
        had_one = False  # a resume job of the host was pending or running
        for _ in range(_RESUME_TURNS):
            handle = self.resume_task.send_in(delay, host, level, rate)
            if not handle.duplicate:
                if not started and not had_one:
                    store.delete([handle.id])  # not due for a second at least
                    log.info("host %s is held at 0 by hand: the crawler leaves it so", host)
                return
            job = store.get_job(handle.id)
            had_one = True
            if job is None or job.state.finished:
                continue  # it ended meanwhile
            if job.state is JobState.RUNNING:
                with contextlib.suppress(JobFailed, JobTimeout):
                    handle.result(timeout=_RESUME_WAIT)
                continue
            if not started and job.run_at >= until:
                return  # a pause as long or longer stands
            store.delete([job.id])  # refused if it started meanwhile: the next turn sees it
        log.warning("host %s: its resume job could not be sent; its pause ends by hand", host)

    # -- one answer ------------------------------------------------------------

    def _answer(
        self,
        url: str,
        depth: int,
        previous: dict[str, Any] | None,
        rules: Rules,
        got: fetching.Fetched,
        redirects: int = 0,
    ) -> dict[str, Any]:
        """What a fetch job keeps of an answer that is not an error, after
        acting on it (parse and follow, redirect, recrawl)."""
        known = {origin(url): rules}
        if got.status == 304:
            kept = _validators(got.headers, previous, (previous or {}).get("hash"))
            self._schedule_recrawl(url, depth, kept, redirects)
            return {"changed": False}
        if 300 <= got.status < 400:
            return self._redirect(url, depth, got, known, redirects)
        if got.status >= 400:
            return {}  # gone or refused: not fetched again
        kept = _validators(got.headers, None, fetching.content_hash(got.content))
        if previous and previous.get("hash") == kept["hash"]:
            self._schedule_recrawl(url, depth, kept, redirects)
            return {"changed": False} | kept
        response = Response(
            url,
            got.status,
            got.headers,
            got.content,
            depth=depth,
            seconds=got.seconds,
            truncated=got.truncated,
        )
        items, links = self._parse(response)
        followed = self.frontier.follow(links, depth + 1, known)
        self._schedule_recrawl(url, depth, kept, redirects)
        return {"changed": True, "items": items, "links": followed} | kept

    def _redirect(
        self, url: str, depth: int, got: fetching.Fetched, known: dict[str, Rules], before: int
    ) -> dict[str, Any]:
        """Follow a redirect from a page that ``before`` redirects in a row
        led to: its target keeps the page's depth (a redirect is no hop) and
        is not followed past :data:`~rota.crawl.fetching.MAX_REDIRECTS` in a
        row, nor out of the crawl's scope; ``not_followed`` says why."""
        location = got.headers.get("location", "")
        target = resolve(url, location)
        redirects = before + 1
        if target is None:  # another scheme (ftp:, mailto:), or no URL at all
            shown = location.strip()[:MAX_URL_LENGTH] or None
            why = "not an http(s) URL the crawl can fetch" if shown else "no Location header"
            return {"redirect": shown, "redirects": redirects, "links": 0, "not_followed": why}
        self._schedule_recrawl(url, depth, None, before)
        result: dict[str, Any] = {"redirect": target, "redirects": redirects}
        refusal = self.settings.scope.refusal(target)
        if redirects > MAX_REDIRECTS:
            refusal = f"more than {MAX_REDIRECTS} redirects"
        if refusal is not None:
            return result | {"links": 0, "not_followed": refusal}
        return result | {"links": self.frontier.follow([target], depth, known, redirects)}

    def _schedule_recrawl(
        self, url: str, depth: int, kept: dict[str, Any] | None, redirects: int
    ) -> None:
        """Send the recrawl job of ``url``, which ``redirects`` redirects in
        a row led to, to run once the recrawl age is over."""
        age = self.settings.recrawl
        if age is not None:
            job = current_job()
            self.recrawl_task.send_in(age, url, depth, kept, job.id, redirects)

    def _parse(self, response: Response) -> tuple[list[Any], list[str]]:
        """Run the parse callbacks that match the page: its items and links."""
        items: list[Any] = []
        links: list[str] = []
        for callback in self.callbacks or [Callback(_follow_all)]:
            if callback.match is not None and not callback.match.search(response.url):
                continue
            name = getattr(callback.fn, "__qualname__", repr(callback.fn))
            try:
                for value in _values(callback.fn(response)):
                    if isinstance(value, dict):
                        items.append(value)
                    elif isinstance(value, Link):
                        links.append(value.url)
                    elif value is not None:
                        raise ParseFailed(
                            f"parse callback {name} gave {value!r} ({type(value).__name__}) for "
                            f"{response.url}: give items as dicts and links as "
                            "response.follow(...) or response.links()"
                        )
            except ParseFailed:
                raise
            except Exception as exc:
                raise ParseFailed(
                    f"parse callback {name} failed on {response.url}: {type(exc).__name__}: {exc}"
                ) from exc
        return items, links


def _follow_all(response: Response) -> list[Link]:
    """The parse of a crawler without callbacks: follow every link."""
    return response.links()


def _values(returned: object) -> Iterable[object]:
    """What a callback gave, as values: nothing, one item or link, or many."""
    if returned is None:
        return ()
    if isinstance(returned, dict | Link | str | bytes):
        return (returned,)
    if isinstance(returned, Iterable):
        return returned
    return (returned,)


def _validators(
    headers: httpx.Headers, previous: dict[str, Any] | None, digest: str | None
) -> dict[str, Any]:
    """What the next fetch of a page sends back (its ``previous``): the
    answer's ``ETag`` and ``Last-Modified`` (those of the last fetch when a
    304 leaves them out) and the hash of the content."""
    old = previous or {}
    kept = {
        "etag": headers.get("etag") or old.get("etag"),
        "last_modified": headers.get("last-modified") or old.get("last_modified"),
        "hash": digest,
    }
    return {key: value for key, value in kept.items() if value is not None}
