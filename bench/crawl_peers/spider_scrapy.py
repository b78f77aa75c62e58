"""Scrapy's side of the crawl bench: the usual spider (title as an item,
``response.follow`` for every link) with scrapy-redis's scheduler, duplicate
filter and item pipeline, so several processes share one frontier in Redis.

Run with ``scrapy runspider spider_scrapy.py`` in the Scrapy virtualenv, with
``BENCH_REDIS_URL``, ``BENCH_SEEDS`` (JSON list of seed URLs) and
``BENCH_CONCURRENCY`` (requests at once per process) in the environment.
Politeness is off: no delay, no AutoThrottle, a host may take every slot;
robots.txt is obeyed, as rota.crawl always does.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import scrapy

CONCURRENCY = int(os.environ.get("BENCH_CONCURRENCY", "32"))


class BenchSpider(scrapy.Spider):
    name = "bench"
    custom_settings = {
        "SCHEDULER": "scrapy_redis.scheduler.Scheduler",
        "DUPEFILTER_CLASS": "scrapy_redis.dupefilter.RFPDupeFilter",
        "SCHEDULER_PERSIST": True,  # the other process may still be crawling
        "ITEM_PIPELINES": {"scrapy_redis.pipelines.RedisPipeline": 300},
        "REDIS_URL": os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/0"),
        "CONCURRENT_REQUESTS": CONCURRENCY,
        "CONCURRENT_REQUESTS_PER_DOMAIN": CONCURRENCY,
        "DOWNLOAD_DELAY": 0,
        "AUTOTHROTTLE_ENABLED": False,
        "ROBOTSTXT_OBEY": True,
        "TELNETCONSOLE_ENABLED": False,
        "LOG_LEVEL": "WARNING",
    }

    def start_requests(self) -> Iterator[scrapy.Request]:
        # filtered like any other request: both processes send the seeds
        for url in json.loads(os.environ["BENCH_SEEDS"]):
            yield scrapy.Request(url)

    def parse(self, response: Any) -> Iterator[Any]:
        yield {"title": response.css("title::text").get()}
        for href in response.css("a::attr(href)").getall():
            yield response.follow(href, callback=self.parse)
