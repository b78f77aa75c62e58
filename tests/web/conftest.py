"""Fixtures for the dashboard tests: an app on the test store and clients of it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from starlette.testclient import TestClient

import rota
from rota.stores import Store
from rota.web import create_app
from web.support import BASE, OPERATOR, SECRET, VIEWER, Demo, client_for


@pytest.fixture
def demo(store: Store, url: str) -> Iterator[Demo]:
    """Tasks on two queues plus one with a concurrency limit and a breaker."""
    app = rota.App(url)
    app.use_store(store)

    @app.task(queue="crawl", name="crawl.fetch")
    def fetch(page: str) -> Any:
        return {"fetched": page}

    @app.task(name="math.add", retries=0)
    def add(a: int, b: int) -> int:
        return a + b

    @app.task(
        queue="guarded",
        name="guarded.call",
        concurrency=rota.Limit("site", 2),
        breaker=rota.Breaker(failures=1, cooldown=600, key="flaky-api"),
    )
    def guarded(page: str) -> Any:
        return page

    yield Demo(app, store, fetch, add, guarded)


@pytest.fixture
def client(demo: Demo) -> Iterator[TestClient]:
    """A client of a dashboard with no token: everyone is operator."""
    with client_for(demo) as c:
        yield c


@pytest.fixture
def secured(demo: Demo) -> Iterator[Callable[[], TestClient]]:
    """Make clients of one dashboard with operator and viewer tokens."""
    asgi = create_app(demo.app, token=OPERATOR, viewer_token=VIEWER, secret=SECRET)
    made: list[TestClient] = []

    def make() -> TestClient:
        c = TestClient(asgi, base_url=BASE, follow_redirects=False, client=("127.0.0.1", 50000))
        made.append(c)
        return c

    yield make
    for c in made:
        c.close()
