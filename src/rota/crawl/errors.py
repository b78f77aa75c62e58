"""Why a crawl job did not end with a page: each fails the attempt with a
message naming the URL or host, and says whether the job is tried again."""

from __future__ import annotations

from rota.errors import RotaError, Snooze

__all__ = ["CrawlError", "FetchFailed", "ParseFailed", "Throttled", "TryLater"]


class CrawlError(RotaError):
    """Base class of the crawler's errors."""


class TryLater(CrawlError, Snooze):
    """Not now: robots.txt of the job's origin is not read yet, its host was
    paused after the fetch was claimed, or, with a seen-set, a recrawl came
    before the last fetch let go of the URL. A
    :class:`~rota.errors.Snooze`: the job runs again in ``seconds`` without
    using one of its retries, so a page waits for its robots.txt as long as
    it takes."""

    def __init__(self, message: str, seconds: float) -> None:
        Snooze.__init__(self, seconds, message)


class Throttled(CrawlError):
    """The host answered 429 or 503: it is paused (see
    :mod:`rota.crawl.pacing`), and the job tried again with backoff (no
    fetch of the host starts before the pause is over). It counts as an
    attempt, but not in the host's breaker: the host did answer."""


class FetchFailed(CrawlError):
    """No usable answer: a 5xx other than 503, or a network error or timeout.
    Tried again with backoff; counts towards the host's breaker.

    ``kind`` says which (``5xx``, ``timeout``, ``connection``; ``throttled``
    for a robots.txt answered 429). It is also the first word of the
    message, so the error a job keeps (``FetchFailed: timeout: ...``) says
    it too: see :mod:`rota.crawl.outcomes`."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind = kind


class ParseFailed(CrawlError):
    """A parse callback raised, or returned something that is neither an
    item (a dict) nor a :class:`~rota.crawl.Link`. Not tried again: the
    code needs fixing first (then ``rota jobs retry``). Not counted in the
    host's breaker: the host answered."""
