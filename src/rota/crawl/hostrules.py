"""robots.txt, fetched once per origin for the whole cluster and kept as a
job result.

The robots job of an origin has the unique key of the origin, held for
``robots_ttl`` after it succeeded, so sending it again within that time
returns the job that fetched it (whose result is the file): the store's
uniqueness is the cache and its TTL. Each process keeps the rules it read
until the TTL is over (by the store's clock), and sends the robots job
again after that; the first to send it makes the one fetch of the next
period.
"""

from __future__ import annotations

import contextlib
import random
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import httpx

from rota.crawl import fetching, outcomes, robots
from rota.crawl.adapt import parse_retry_after
from rota.crawl.errors import FetchFailed, TryLater
from rota.crawl.pacing import Pacer
from rota.crawl.robots import Rules
from rota.crawl.settings import Settings
from rota.errors import JobFailed, JobTimeout
from rota.models import Job, JobState

if TYPE_CHECKING:
    from rota.task import Task

__all__ = ["RobotsBook"]


@dataclass(frozen=True, slots=True)
class _Entry:
    rules: Rules
    until: float  # time.monotonic()


class RobotsBook:
    """The robots.txt rules of each origin, as this process knows them."""

    def __init__(self, settings: Settings, clients: fetching.Clients, pacer: Pacer) -> None:
        self._settings = settings
        self._clients = clients
        self._pacer = pacer
        self._lock = threading.Lock()
        self._entries: dict[str, _Entry] = {}
        # origins whose robots job gave up: why, and until when (time.monotonic())
        # no page of theirs sends it again from this process
        self._gave_up: dict[str, tuple[str, float]] = {}
        # the robots job of each origin whose pages wait for it here: once it
        # has failed, its unique key is free and a send would make a new one
        self._waiting_on: dict[str, str] = {}
        self.task: Task[[str], dict[str, Any]] | None = None  # set once registered

    def known(self, origin: str) -> Rules | None:
        """The rules of ``origin`` if this process has them and they are
        within their TTL; no store access."""
        with self._lock:
            entry = self._entries.get(origin)
        if entry is None or entry.until <= time.monotonic():
            return None
        return entry.rules

    def rules(self, origin: str) -> Rules:
        """The rules of ``origin``: this process's copy, else the robots job's
        result (sending that job if no fetch of the file is within its TTL,
        and waiting up to ``robots_wait`` seconds for one being fetched).
        :class:`TryLater` when the file is not read yet or is unreachable:
        nothing of the origin is fetched meanwhile, and the page snoozes
        (5 s while the file is being fetched, until its next try while its
        fetch is retried, 60 s once it gave up; each spread by up to half)."""
        known = self.known(origin)
        if known is not None:
            return known
        self._check_hold(origin)
        assert self.task is not None
        handle = self.task.send(origin)
        job = handle.job()
        # inline (rota.testing), the robots job runs once this attempt ends,
        # and the attempt again right after: waiting would only delay it
        inline = self.task.app._inline is not None
        if job.state in (JobState.QUEUED, JobState.RUNNING) and not inline:
            with contextlib.suppress(JobTimeout, JobFailed):
                handle.result(timeout=self._settings.robots_wait)
            job = handle.job()
        store = self.task.app.store
        if job.state is not JobState.SUCCEEDED or not isinstance(job.result, dict):
            if job.state.finished:  # it gave up: the next try waits for a minute
                self._hold(origin, job)
            with self._lock:
                self._waiting_on[origin] = job.id
            why, wait = _waiting(job, store.now())
            spread = wait * (1.0 + random.random() / 2)  # the pages do not all wake at once
            raise TryLater(f"robots.txt of {origin} is not read yet: {why}", spread)
        with self._lock:
            self._waiting_on.pop(origin, None)
        rules = Rules.from_result(job.result, self._settings.agent)
        left = (job.finished_at or store.now()) + self._settings.robots_ttl - store.now()
        with self._lock:
            self._entries[origin] = _Entry(rules, time.monotonic() + max(1.0, left))
        return rules

    def _check_hold(self, origin: str) -> None:
        """:class:`TryLater` while ``origin``'s robots job gave up less than
        a minute ago: the one this process holds for it, or the one its
        pages last waited for, which has failed since (its unique key is
        then free, so sending it again would make a new one)."""
        with self._lock:
            last = self._waiting_on.pop(origin, None)
        if last is not None:
            assert self.task is not None
            job = self.task.app.store.get_job(last)
            if job is not None and job.state.finished and job.state is not JobState.SUCCEEDED:
                self._hold(origin, job)
        with self._lock:
            why, until = self._gave_up.get(origin, ("", 0.0))
        if until > time.monotonic():
            wait = (until - time.monotonic()) * (1.0 + random.random() / 2)
            raise TryLater(f"robots.txt of {origin} is not read yet: {why}", wait)

    def _hold(self, origin: str, job: Job) -> None:
        """Hold ``origin``'s robots.txt for :data:`_WAIT_UNREACHABLE` seconds
        from the end of ``job``, its robots job that gave up: by the store's
        clock, so every process that saw the job ends its hold at once."""
        assert self.task is not None
        store = self.task.app.store
        why, wait = _waiting(job, store.now())
        left = (job.finished_at or store.now()) + wait - store.now()
        with self._lock:
            self._gave_up[origin] = (why, time.monotonic() + left)

    def fetch(self, origin: str) -> dict[str, Any]:
        """Fetch ``origin``'s robots.txt (the robots job): what to keep for a
        usable answer, or :class:`FetchFailed` (429, 5xx, no answer), which
        fails the attempt; the job is tried again with backoff. A 429 or 503
        with a ``Retry-After`` pauses the host as a page's does (see
        :meth:`rota.crawl.pacing.Pacer.throttle`): the job carries the host's
        concurrency key, so the store holds its next try until the pause is
        over."""
        url = f"{origin}/robots.txt"
        try:
            got = fetching.get(
                self._clients.get(),
                url,
                max_bytes=robots.MAX_ROBOTS_BYTES,
                follow_redirects=True,
            )
        except httpx.TooManyRedirects:
            return {"status": 310, "text": ""}  # past MAX_REDIRECTS: unavailable
        except httpx.HTTPError as exc:
            kind = outcomes.network_kind(exc)
            raise FetchFailed(kind, f"{url}: {type(exc).__name__}: {exc}") from exc
        if not robots.reachable(got.status):
            detail = f"{url} answered {got.status}: nothing of {origin} is fetched yet"
            asked = parse_retry_after(got.headers.get("retry-after"), time.time())
            if got.status in (429, 503) and asked is not None:
                host = urlsplit(origin).netloc
                pause = self._pacer.throttle(host, asked)
                detail += f"; {host} is paused for {pause:.1f} s"
            raise FetchFailed(outcomes.status_kind(got.status), detail)
        return robots.stored(got.status, got.content)


#: How long a page waits for a robots.txt being fetched, and for one whose
#: fetch gave up (its origin unreachable; the next page to wake sends it again).
_WAIT_FETCHING = 5.0
_WAIT_UNREACHABLE = 60.0


def _waiting(job: Job, now: float) -> tuple[str, float]:
    """Why a page of the origin of ``job`` (its robots job) cannot be
    fetched yet, and how long it waits before it asks again."""
    if job.state in (JobState.QUEUED, JobState.RUNNING):
        return "it is being fetched", _WAIT_FETCHING
    if job.state is JobState.SCHEDULED:  # its fetch is tried again then
        why = f"its fetch is tried again shortly (last error: {job.error})"
        return why, max(1.0, job.run_at - now + 1.0)
    return f"its fetch failed ({job.error})", _WAIT_UNREACHABLE
