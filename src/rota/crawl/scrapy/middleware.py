"""When a claimed request is done with: the middleware that ends its job.

``Finish`` is a spider middleware and a downloader middleware at once
(:func:`rota.crawl.scrapy.settings` puts it in both). As a spider
middleware (order 10, after ``HttpErrorMiddleware``), it ends a request's
job once the callback's output has been taken in full, so every request
the callback yielded is in the store before its parent's job ends: no
process sees the frontier empty while a page's links are on their way. A
callback that raises ends the job ``failed`` with the error. As a
downloader middleware (order 50, before ``RetryMiddleware`` gives up on
the way out), it ends ``failed`` the job of a request whose download
failed for good or that a middleware dropped (``IgnoreRequest``).

It also checks the ``ROTA_*`` settings when Scrapy builds it, with its
engine, before the spider opens: a bad one stops the crawl there with the
:class:`~rota.errors.InvalidArgument` that names it, as Scrapy's own
components refuse theirs. (The scheduler reads them again once the spider
opens, too late for Scrapy to report its refusal as the crawl's error: its
cleanup fails on the half-opened engine and hides it.)
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from rota.crawl.scrapy import options
from rota.crawl.scrapy.scheduler import request_done

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response

__all__ = ["Finish"]


class Finish:
    """Ends the job of each claimed request when Scrapy is done with it."""

    def __init__(self, crawler: Crawler) -> None:
        # a bad ROTA_* setting is refused now, with the engine: see the module's docstring
        options.of(crawler)
        self.signals = crawler.signals

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Finish:
        """The middleware of ``crawler`` (Scrapy's way to build it)."""
        return cls(crawler)

    def _done(self, request: Request, status: int | None = None, error: str | None = None) -> None:
        self.signals.send_catch_log(request_done, request=request, status=status, error=error)

    # -- spider middleware -----------------------------------------------------

    def process_spider_output(
        self, response: Response, result: Iterable[Any], spider: Any = None
    ) -> Iterator[Any]:
        """Pass the callback's output on, then end the request's job."""
        try:
            yield from result
        except Exception as exc:
            self._done(response.request, error=_error(exc))  # type: ignore[arg-type]
            raise
        self._done(response.request, status=response.status)  # type: ignore[arg-type]

    async def process_spider_output_async(
        self, response: Response, result: AsyncIterator[Any], spider: Any = None
    ) -> AsyncIterator[Any]:
        """:meth:`process_spider_output` for asynchronous callbacks."""
        try:
            async for item in result:
                yield item
        except Exception as exc:
            self._done(response.request, error=_error(exc))  # type: ignore[arg-type]
            raise
        self._done(response.request, status=response.status)  # type: ignore[arg-type]

    def process_spider_exception(
        self, response: Response, exception: Exception, spider: Any = None
    ) -> None:
        """A callback (or an earlier middleware's input check) raised."""
        self._done(response.request, error=_error(exception))  # type: ignore[arg-type]

    # -- downloader middleware -------------------------------------------------

    def process_exception(self, request: Request, exception: Exception, spider: Any = None) -> None:
        """The download failed for good, or a middleware dropped the request."""
        self._done(request, error=_error(exception))


def _error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"
