"""A plain Scrapy spider (Scrapy's own scheduler) run as a rota command by
tests/integration/test_scrapy_commands.py: it crawls the host of its
``start`` argument (``-a start=URL``) and keeps, in the file ``COUNTED``
(under an exclusive lock), how many such spiders are running, logging
each change to ``COUNTED.log`` as ``pid +1|-1 running``."""

import fcntl
import os

import scrapy


def count(step: int) -> None:
    with open(os.environ["COUNTED"], "a+") as counter:
        fcntl.flock(counter, fcntl.LOCK_EX)
        counter.seek(0)
        running = int(counter.read() or 0) + step
        counter.seek(0)
        counter.truncate()
        counter.write(str(running))
        with open(os.environ["COUNTED"] + ".log", "a") as log:
            log.write(f"{os.getpid()} {step:+d} {running}\n")


class CountedSpider(scrapy.Spider):
    name = "counted"
    custom_settings = {"TELNETCONSOLE_ENABLED": False, "LOG_LEVEL": "INFO"}

    def __init__(self, start: str, **kwargs):
        super().__init__(**kwargs)
        self.start_urls = [start]
        count(+1)

    def closed(self, reason):
        count(-1)

    def parse(self, response):
        yield {"url": response.url}
        yield from response.follow_all(css="a", callback=self.parse)
