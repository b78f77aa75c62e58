"""Scrapy spiders as rota command jobs: at most two running at once across
every worker (tests/integration/test_scrapy_commands.py)."""

import sys
from pathlib import Path

from rota import App, Limit

app = App()

SPIDER = str(Path(__file__).with_name("scrapy_counted.py"))

spider = app.command(
    "spider",
    [sys.executable, "-m", "scrapy", "runspider", SPIDER],  # extra_args: -a start=URL
    timeout=60,
    grace=5,
    retries=2,
    backoff=(1, 10),
    queue="spiders",
    concurrency=Limit("spiders", 2),
)

#: A spider stopped by its timeout: SIGTERM, which Scrapy takes as "close".
#: The timeout leaves Scrapy time to start on a busy machine: a SIGTERM
#: before its reactor runs kills it without a close.
stopped_spider = app.command(
    "stopped_spider",
    [sys.executable, "-m", "scrapy", "runspider", SPIDER],
    timeout=5,
    grace=20,
    queue="spiders",
    concurrency=Limit("spiders", 2),
)
