"""rota.crawl.scrapy.Scheduler in this process (inside an asyncio loop, as
Scrapy runs it) on a real SQLite file and a real Redis: what it sends,
refuses and claims, and the jobs it ends or gives back, read from the
store. The Scrapy processes of tests/integration/test_scrapy.py cover the
rest."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import scrapy
from scrapy.utils.test import get_crawler

from backends import drop_store, store_url
from helpers import wait_for
from rota.crawl.scrapy import Scheduler, settings
from rota.crawl.scrapy.scheduler import request_done
from rota.models import Job, JobQuery, JobState
from rota.stores import Store, open_store

QUEUE = "scrapy-shop"


class Shop(scrapy.Spider):
    name = "shop"

    def parse(self, response: Any) -> None:
        return None


@pytest.fixture(params=["sqlite", "redis"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    value = store_url(str(request.param), tmp_path)
    yield value
    drop_store(str(request.param), value)


@pytest.fixture
def store(url: str) -> Iterator[Store]:
    opened = open_store(url)
    yield opened
    opened.close()


Body = Callable[[Scheduler], None]


def with_scheduler(url: str, body: Body, **values: Any) -> scrapy.crawler.Crawler:
    """Run ``body`` with an open scheduler (closed after it) in an asyncio
    loop; returns the crawler (its stats)."""
    crawler = get_crawler(Shop, {**settings(url), **values})
    spider = Shop()
    crawler.spider = spider

    async def run() -> None:
        scheduler = Scheduler.from_crawler(crawler)
        scheduler.open(spider)
        try:
            body(scheduler)
        finally:
            scheduler.close("finished")

    asyncio.run(run())
    return crawler


def jobs(store: Store) -> list[Job]:
    return list(store.list_jobs(JobQuery(queue=QUEUE), limit=100).jobs)


def done(scheduler: Scheduler, request: scrapy.Request, status: int = 200) -> None:
    """What rota.crawl.scrapy.Finish says when Scrapy is done with ``request``."""
    scheduler.crawler.signals.send_catch_log(request_done, request=request, status=status)


def test_a_request_is_sent_once_however_often_it_is_found(url: str, store: Store) -> None:
    sent: list[bool] = []

    def body(scheduler: Scheduler) -> None:
        page = scrapy.Request("http://shop.test/a")
        sent.extend(scheduler.enqueue_request(page.copy()) for _ in range(3))
        again = scrapy.Request("http://shop.test/b", dont_filter=True)
        sent.extend(scheduler.enqueue_request(again.copy()) for _ in range(2))
        start = scrapy.Request("http://shop.test/", dont_filter=True)
        start.meta["is_start_request"] = True  # as Scrapy marks them
        sent.extend(scheduler.enqueue_request(start.copy()) for _ in range(2))

    crawler = with_scheduler(url, body)
    assert sent == [True, False, False, True, True, True, False]
    assert crawler.stats.get_value("dupefilter/filtered") == 3
    urls = sorted(job.args[0]["url"] for job in jobs(store))
    assert urls == [
        "http://shop.test/",
        "http://shop.test/a",
        "http://shop.test/b",
        "http://shop.test/b",
    ]


def test_another_process_finds_the_request_in_the_store(url: str, store: Store) -> None:
    first: list[bool] = []
    with_scheduler(url, lambda s: first.append(s.enqueue_request(scrapy.Request("http://x.test/"))))
    again: list[bool] = []
    with_scheduler(url, lambda s: again.append(s.enqueue_request(scrapy.Request("http://x.test/"))))
    assert (first, again) == ([True], [False])  # its memory is new; the store knows


def test_start_requests_go_every_time_when_asked(url: str, store: Store) -> None:
    start = scrapy.Request("http://shop.test/", dont_filter=True, meta={"is_start_request": True})
    sent: list[bool] = []
    body: Body = lambda s: sent.extend(s.enqueue_request(start.copy()) for _ in range(2))  # noqa: E731
    with_scheduler(url, body, ROTA_FILTER_START=False)
    assert sent == [True, True]


def test_a_request_that_cannot_be_stored_is_logged_and_dropped(
    url: str, store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    sent: list[bool] = []
    bad = scrapy.Request("http://shop.test/item", meta={"item": {"price": object()}})
    with caplog.at_level(logging.ERROR, logger="rota.crawl.scrapy.scheduler"):
        crawler = with_scheduler(url, lambda s: sent.append(s.enqueue_request(bad)))
    assert sent == [False]
    assert "request http://shop.test/item: " in caplog.text
    assert "meta['item']['price'] is an object, not JSON" in caplog.text
    assert crawler.stats.get_value("rota/unstorable") == 1
    assert jobs(store) == []


def test_claims_follow_priority_and_each_hosts_limit(url: str, store: Store) -> None:
    claimed: list[str | None] = []

    def body(scheduler: Scheduler) -> None:
        for path, priority in (("/1", 0), ("/2", 5), ("/3", 0)):
            scheduler.enqueue_request(scrapy.Request(f"http://a.test{path}", priority=priority))
        scheduler.enqueue_request(scrapy.Request("http://b.test/1"))
        first = scheduler.next_request()
        claimed.extend(r.url if r else None for r in (first, scheduler.next_request()))
        claimed.append(getattr(scheduler.next_request(), "url", None))  # a.test is at its limit
        assert first is not None
        done(scheduler, first)  # frees a.test's slot
        claimed.append(getattr(scheduler.next_request(), "url", None))

    with_scheduler(url, body, ROTA_PER_HOST=1)
    assert claimed == ["http://a.test/2", "http://b.test/1", None, "http://a.test/1"]
    by_url = {job.args[0]["url"]: job for job in jobs(store)}
    assert by_url["http://a.test/2"].state is JobState.SUCCEEDED
    assert by_url["http://a.test/2"].result == {"url": "http://a.test/2", "status": 200}
    # what was still held when the scheduler closed went back, no attempt counted
    for held in ("http://b.test/1", "http://a.test/1"):
        assert by_url[held].state is JobState.QUEUED
        assert [entry["event"] for entry in by_url[held].history] == ["released"]


def test_a_retry_or_redirect_ends_the_job_it_follows(url: str, store: Store) -> None:
    def body(scheduler: Scheduler) -> None:
        scheduler.enqueue_request(scrapy.Request("http://a.test/old"))
        claimed = scheduler.next_request()
        assert claimed is not None
        scheduler.enqueue_request(claimed.replace(url="http://a.test/new"))  # as RedirectMiddleware

    with_scheduler(url, body)
    by_url = {job.args[0]["url"]: job for job in jobs(store)}
    assert by_url["http://a.test/old"].state is JobState.SUCCEEDED
    assert by_url["http://a.test/old"].result == {"followed_by": "http://a.test/new"}
    assert by_url["http://a.test/new"].state is JobState.QUEUED
    assert by_url["http://a.test/new"].args[0]["meta"] == {}  # the claim is not stored


def test_a_limit_set_on_a_host_holds_its_requests(url: str, store: Store) -> None:
    claimed: list[str | None] = []

    def body(scheduler: Scheduler) -> None:
        store.set_limit("a.test", 0)  # as `rota limits set a.test 0`, or a crawl kit's pause
        scheduler.enqueue_request(scrapy.Request("http://a.test/1"))
        scheduler.enqueue_request(scrapy.Request("http://b.test/1"))
        claimed.extend(getattr(scheduler.next_request(), "url", None) for _ in range(2))
        store.set_limit("a.test", None)
        claimed.append(wait_for(scheduler.next_request, 5, what="a.test's request").url)

    with_scheduler(url, body, ROTA_POLL=0.01)
    assert claimed == ["http://b.test/1", None, "http://a.test/1"]
