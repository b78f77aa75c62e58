"""The crawl page in real headless Chromium (see test_web_browser.py for the
browser fixtures), served by uvicorn over a finished real crawl (see
web/crawl_lab.py): a viewer follows the navigation to it and sees the host
table and the chart, which the page's script keeps polling."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn

from helpers import wait_for
from rota.web import create_app
from web.crawl_lab import Crawled, crawled
from web.support import OPERATOR, SECRET, VIEWER, free_port
from web.test_web_browser import TIMEOUT_MS, _log_in, browser, expect, page

pytestmark = pytest.mark.browser

__all__ = ["browser", "page"]  # fixtures used here by name


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Crawled, str]]:
    """A crawl on SQLite, and the dashboard of its app served by uvicorn."""
    with crawled(f"sqlite:///{tmp_path / 'rota.db'}", tmp_path) as done:
        port = free_port()
        asgi = create_app(done.module.app, token=OPERATOR, viewer_token=VIEWER, secret=SECRET)
        config = uvicorn.Config(asgi, host="127.0.0.1", port=port, log_level="warning")
        server = uvicorn.Server(config)
        thread = threading.Thread(target=server.run, name="test-uvicorn", daemon=True)
        thread.start()
        try:
            wait_for(lambda: server.started, timeout=20, what="uvicorn to start")
            yield done, f"http://127.0.0.1:{port}"
        finally:
            server.should_exit = True
            thread.join(timeout=20)
    assert not thread.is_alive()


def test_a_viewer_opens_the_crawl_page_and_sees_hosts_and_the_chart(
    served: tuple[Crawled, str], page: Any
) -> None:
    crawl, base = served
    _log_in(page, base, VIEWER)
    page.click("nav >> text=Crawls")
    expect(page).to_have_url(base + "/crawls")
    page.click("#crawls >> text=site")
    expect(page).to_have_url(base + "/crawls/site")

    a_fetched = sum(1 for r in crawl.pages("a") if r.status != 429)
    a_row = page.locator(f'#hosts tr[data-host="{crawl.site.key("a")}"]')
    expect(a_row.locator("td.fetched")).to_have_text(str(a_fetched))
    expect(a_row.locator("td.robots .badge")).to_have_text("fetched")
    c_row = page.locator(f'#hosts tr[data-host="{crawl.site.key("c")}"]')
    expect(c_row.locator("td.robots .badge")).to_have_text("disallow-all")
    expect(page.locator("#hosts tbody tr")).to_have_count(4)
    expect(page.locator("#hosts")).to_be_visible()

    fetched = sum(1 for r in crawl.log if r.path != "/robots.txt" and r.status != 429)
    expect(page.locator("#legend-succeeded")).to_have_text(str(fetched))
    expect(page.locator("#legend-failed")).to_have_text("1")
    live = "/api/crawls/site/live"
    with page.expect_response(lambda r: r.url.endswith(live), timeout=TIMEOUT_MS) as polled:
        pass  # the script polls every 2 s
    assert polled.value.status == 200
    expect(page.locator("#live-status")).to_have_text("")
    heights = page.eval_on_selector_all(
        "#chart-bars rect.ok", "rects => rects.map(r => Number(r.getAttribute('height')))"
    )
    assert len(heights) == 60 and max(heights) > 0
    expect(page.locator("#chart")).to_be_visible()
    assert page.locator("#chart").bounding_box()["height"] > 50
