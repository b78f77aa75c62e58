"""Sending pages to fetch: each fetch job carries its host's politeness.

A fetch job carries its host (``urls.host_key``) as the key of a
concurrency limit (``per_host``, or the level the store holds for it), of a
rate (the crawler's, or slower for a ``Crawl-delay``) and of a breaker, so
the store enforces them at claim time across the cluster, and the host is
the job's fair key: claims rotate over hosts. Its unique key is the URL,
held for good once fetched: a URL found again is not sent again (its
recrawl jobs send it, round the key).

With a seen-set (:mod:`rota.crawl.seen`), a discovered link already in
it is not sent at all; seeds and recrawls do not pass through it.

Links whose origin's robots.txt this process does not know yet go to an
admit job of that origin instead, which reads robots.txt first (waiting for
it if need be) and sends the allowed ones at the host's rate.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rota import Breaker, Limit, Rate
from rota.crawl.errors import ParseFailed, Throttled
from rota.crawl.hostrules import RobotsBook
from rota.crawl.robots import Rules
from rota.crawl.seen import SeenFilter
from rota.crawl.settings import Settings
from rota.crawl.urls import host_key, origin

if TYPE_CHECKING:
    from rota.task import JobHandle, Task

__all__ = ["Frontier"]

#: Most URLs one admit job carries.
ADMIT_BATCH = 500
#: Failed fetches a host's breaker does not count: the parse callback's
#: error (the crawl's code needs fixing, the host answered) and a throttle
#: (the host's pause already holds its fetches back).
HOST_NOT_AT_FAULT = (ParseFailed, Throttled)
#: One fetch job's call: URL, depth, the validators of its last fetch, and
#: (when above 0) how many redirects in a row led to the URL.
Call = tuple[str, int, dict[str, Any] | None] | tuple[str, int, dict[str, Any] | None, int]
#: A page to send: URL, depth, and how many redirects in a row led to it.
Found = tuple[str, int, int]


class Frontier:
    """Sends fetch and admit jobs for one crawler."""

    def __init__(
        self, settings: Settings, robots: RobotsBook, seen: SeenFilter | None = None
    ) -> None:
        self._settings = settings
        self._robots = robots
        self.seen = seen
        self.fetch_task: Task[..., dict[str, Any]] | None = None  # set once registered
        self.admit_task: Task[..., dict[str, Any]] | None = None

    def fetch(self, host: str, rules: Rules, calls: Sequence[Call]) -> list[JobHandle[Any]]:
        """Send one fetch job per call, all of ``host``, whose robots.txt
        ``rules`` are known; duplicates (a URL fetched or pending) come back
        with ``duplicate`` set."""
        if not calls:
            return []
        return self.fetch_task_for(host, rules).send_many([list(call) for call in calls])

    def fetch_task_for(self, host: str, rules: Rules) -> Task[..., dict[str, Any]]:
        """The fetch task with ``host``'s politeness keys: its concurrency
        limit (``per_host``; the store applies the host's level), its rate
        (the crawler's with its burst, or as its robots.txt ``rules`` ask
        for a Crawl-delay, without bursts) and its breaker, which does not
        count the errors of :data:`HOST_NOT_AT_FAULT`. The concurrency key
        is the job's fair key."""
        assert self.fetch_task is not None
        s = self._settings
        return self.fetch_task.options(
            concurrency=Limit(host, s.per_host),
            rate=Rate(s.host_rate(rules), burst=s.host_burst(rules), key=host),
            breaker=Breaker(
                s.breaker.failures,
                s.breaker.cooldown,
                key=host,
                ignore=(*HOST_NOT_AT_FAULT, *s.breaker.ignore),
            ),
        )

    def admit(self, origin_: str, urls: Sequence[Found]) -> list[JobHandle[Any]]:
        """Send the admit jobs of ``urls``, all of origin ``origin_``: one per
        :data:`ADMIT_BATCH` URLs, so each stays far below the payload cap.
        Each URL goes as ``[url, depth]``, or ``[url, depth, redirects]`` at
        the end of a redirect."""
        assert self.admit_task is not None
        pairs = [_entry(*found) for found in urls]
        batches = [pairs[i : i + ADMIT_BATCH] for i in range(0, len(pairs), ADMIT_BATCH)]
        return self.admit_task.send_many([(origin_, batch) for batch in batches])

    def allowed(self, rules: Rules, urls: Sequence[Found]) -> list[Call]:
        """The calls for the ``urls`` that ``rules`` allow."""
        return [_call(url, depth, redirects) for url, depth, redirects in urls if rules.allows(url)]

    def follow(
        self,
        links: Iterable[str],
        depth: int,
        known: Mapping[str, Rules],
        redirects: int = 0,
    ) -> int:
        """Send the ``links`` of a page, found at ``depth`` (the page's depth
        plus one; a redirect's target keeps the depth of the page that
        redirected, and ``redirects`` counts the redirects in a row that led
        to it): each once, in scope, not deeper than ``max_depth``; robots.txt is
        applied now for origins whose rules are ``known`` (or this process
        has), by an admit job for the others. With a seen-set, only the
        links new to it are sent. Returns how many were sent on."""
        s = self._settings
        if s.max_depth is not None and depth > s.max_depth:
            return 0
        followed = [url for url in dict.fromkeys(links) if s.scope.follows(url)]
        if self.seen is not None:
            followed = self.seen.new(followed)
        by_origin: dict[str, list[Found]] = {}
        for url in followed:
            by_origin.setdefault(origin(url), []).append((url, depth, redirects))
        sent = 0
        for key, urls in by_origin.items():
            rules = known.get(key) or self._robots.known(key)
            if rules is None:
                self.admit(key, urls)
                sent += len(urls)
                continue
            calls = self.allowed(rules, urls)
            self.fetch(host_key(key), rules, calls)
            sent += len(calls)
        return sent


def _call(url: str, depth: int, redirects: int) -> Call:
    """A fetch job's call, with its redirect count only when there is one."""
    return (url, depth, None, redirects) if redirects else (url, depth, None)


def _entry(url: str, depth: int, redirects: int) -> list[Any]:
    """An admit job's entry for a URL, with its redirect count only when there is one."""
    return [url, depth, redirects] if redirects else [url, depth]
