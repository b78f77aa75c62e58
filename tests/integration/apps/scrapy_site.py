"""A tiny Scrapy spider on rota's shared frontier, for the tests: it follows
every link of the pages it is given (``SEEDS``, space-separated) and
records what it fetched (``FETCHED``: a file, one URL and pid a line);
its callback raises on a page whose path ends with ``/boom``.
``ROTA_URL`` names the store; ``PER_HOST`` and ``RATE`` the politeness;
``CONCURRENT`` caps the requests the process runs at once (8)."""

import os

import scrapy

from rota.crawl.scrapy import settings


class SiteSpider(scrapy.Spider):
    name = "site"
    start_urls = os.environ.get("SEEDS", "").split()
    custom_settings = {
        **settings(
            os.environ.get("ROTA_URL"),
            per_host=int(os.environ.get("PER_HOST", "2")),
            rate=os.environ.get("RATE") or None,
            lease=float(os.environ.get("LEASE", "30")),
        ),
        "ROBOTSTXT_OBEY": False,
        "TELNETCONSOLE_ENABLED": False,
        "LOG_LEVEL": os.environ.get("LOG_LEVEL", "INFO"),
        "CONCURRENT_REQUESTS": int(os.environ.get("CONCURRENT", "8")),
        "CONCURRENT_REQUESTS_PER_DOMAIN": 8,
    }

    def parse(self, response):
        with open(os.environ["FETCHED"], "a") as out:
            out.write(f"{response.url} {os.getpid()}\n")
        if response.url.endswith("/boom"):
            raise RuntimeError(f"cannot parse {response.url}")
        yield {"url": response.url, "title": response.css("title::text").get()}
        for href in response.css("a::attr(href)").getall():
            yield response.follow(href, self.parse)
