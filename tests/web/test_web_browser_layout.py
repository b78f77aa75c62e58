"""The pages' layout in real headless Chromium (see test_web_browser.py for the
server, worker and browser fixtures): short cells keep their words whole on a
wide screen, and on a narrow one the header keeps its links in its bar."""

from __future__ import annotations

from typing import Any

import pytest

from helpers import wait_for
from rota.models import Outcome, Schedule
from rota.scheduling import every
from rota.scheduling.define import schedule_job
from web.support import OPERATOR, VIEWER, bearer
from web.test_web_browser import Cluster, _log_in, browser, cluster, expect, page

pytestmark = pytest.mark.browser

__all__ = ["browser", "cluster", "page"]  # fixtures used here by name

#: The lines an element's text is laid out on: its text nodes' boxes, a new
#: line where a box starts below the bottom of the line before.
LINES = """el => {
  const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
  const boxes = [];
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const range = document.createRange();
    range.selectNodeContents(node);
    for (const r of range.getClientRects()) if (r.width > 0) boxes.push(r);
  }
  boxes.sort((a, b) => a.top - b.top);
  let lines = 0, bottom = -Infinity;
  for (const r of boxes) {
    if (r.top >= bottom - 1) { lines += 1; bottom = r.bottom; }
    else bottom = Math.max(bottom, r.bottom);
  }
  return lines;
}"""


def _lines(page: Any, selector: str) -> list[int]:
    """How many lines the text of each element ``selector`` finds takes."""
    counts: list[int] = page.eval_on_selector_all(selector, f"els => els.map({LINES})")
    assert counts, f"nothing matches {selector}"
    return counts


def _columns(page: Any, table: str, headers: list[str], row: str) -> dict[str, str]:
    """Selectors of the cells under each of ``headers`` in ``row`` of ``table``."""
    names: list[str] = page.eval_on_selector_all(
        f"#{table} thead th", "ths => ths.map(th => th.textContent.trim())"
    )
    return {h: f"#{table} {row} > td:nth-child({names.index(h) + 1})" for h in headers}


def test_short_cells_keep_their_words_whole_at_1280_px(cluster: Cluster, page: Any) -> None:
    page.set_viewport_size({"width": 1280, "height": 800})
    wait_for(lambda: bool(cluster.app.store.workers()), what="the worker's first heartbeat")
    _log_in(page, cluster.base, OPERATOR, "/workers")
    cells = _columns(page, "workers", ["PID", "Mode", "Status"], "tbody tr")
    for header, selector in cells.items():
        assert _lines(page, selector) == [1], f"{header} wraps: {page.inner_text(selector)!r}"
    badge = page.eval_on_selector(
        cells["Status"] + " .badge",
        "b => [b.getBoundingClientRect().height, parseFloat(getComputedStyle(b).lineHeight)]",
    )
    assert abs(badge[0] - badge[1]) < 1, f"the status badge is one line high: {badge}"

    for name in ("crawl", "default", "a-queue-with-a-rather-long-name"):
        assert page.request.post(
            f"{cluster.base}/api/queues/{name}/pause", headers=bearer(OPERATOR)
        ).ok
    page.goto(f"{cluster.base}/audit")
    audit = _columns(page, "audit", ["Role", "Origin", "Address", "Action"], "tbody tr")
    for header, selector in audit.items():
        assert set(_lines(page, selector)) == {1}, f"{header} wraps"


def test_the_header_wraps_in_its_bar_at_420_px(cluster: Cluster, page: Any) -> None:
    page.set_viewport_size({"width": 420, "height": 800})
    cluster.order.send(1)
    cluster.app.admin.pause_queue("orders")
    _log_in(page, cluster.base, OPERATOR, "/queues")
    bar = page.locator("header.top").bounding_box()
    assert bar is not None and bar["width"] == 420
    for link in page.locator("header.top a, header.top .who > *").all():
        box = link.bounding_box()
        assert box is not None
        assert box["x"] + box["width"] <= bar["x"] + bar["width"] + 0.5, link.inner_text()
        assert box["y"] + box["height"] <= bar["y"] + bar["height"] + 0.5, link.inner_text()
    assert page.evaluate("document.documentElement.scrollWidth") == 420, "the page is as wide"
    expect(page.locator("#queues tr[data-queue=orders] .badge")).to_have_text("paused")
    assert _lines(page, "#queues tr[data-queue=orders] .badge") == [1]


def test_an_error_page_has_the_navigation_and_keeps_its_status(cluster: Cluster, page: Any) -> None:
    """A 404 or 403 shows in the dashboard's frame: the way on is a click, not an
    edited URL."""
    stranger = page.goto(f"{cluster.base}/no/such/page")
    assert stranger is not None and stranger.status == 404
    expect(page).to_have_title("404 Not Found · rota")
    expect(page.locator("header.top .store")).to_have_count(0)  # nothing of the store
    page.click("nav >> text=Jobs")  # a stranger is asked to log in on the way
    expect(page).to_have_url(f"{cluster.base}/login?next=%2Fjobs")

    _log_in(page, cluster.base, VIEWER, "/queues")
    missing = page.goto(f"{cluster.base}/jobs/{'0' * 32}")
    assert missing is not None and missing.status == 404
    expect(page).to_have_title("404 Not Found · rota")
    expect(page.locator("h1")).to_have_text("404 Not Found")
    expect(page.locator("nav a.active")).to_have_text("Jobs")  # the section it is in
    expect(page.locator("header.top .role")).to_have_text("viewer")
    page.click("nav >> text=Schedules")
    expect(page).to_have_url(f"{cluster.base}/schedules")
    expect(page).to_have_title("Schedules · rota")

    refused = page.goto(f"{cluster.base}/queues/orders/purge")  # operators only
    assert refused is not None and refused.status == 403
    expect(page).to_have_title("403 Forbidden · rota")
    expect(page.locator(".error-detail")).to_contain_text("needs the operator role")
    page.click("nav >> text=Queues")
    expect(page).to_have_url(f"{cluster.base}/queues")
    expect(page).to_have_title("Queues · rota")


def test_a_schedules_last_error_and_a_fire_without_a_job_fit_the_table_at_1280_px(
    cluster: Cluster, page: Any
) -> None:
    """The first line of a long error sits under the last job's state, wraps
    in its cell, and links to the job; the schedules table stays inside the
    page."""
    store = cluster.app.store
    now = store.now()
    store.upsert_schedule(
        Schedule(
            name="backup",
            task="shop.order",
            trigger=every(3600).to_json(),
            payload=b'{"args":[1],"kwargs":{}}',
            next_fire=now - 7200,
            job_options={"queue": "nightly", "max_attempts": 1},  # no worker reads it
        )
    )
    stored = store.get_schedule("backup")
    assert stored is not None
    job = schedule_job(stored, job_id="backup-1", fire_time=now - 7200)
    assert store.fire_schedule("backup", now - 7200, now - 3600, job) == "fired"
    [claimed] = store.claim("test-worker", ["nightly"], 1)
    error = "OSError: " + "the backup volume /srv/backup/nightly is full " * 6 + "\nsecond line"
    assert store.finish([Outcome(claimed.id, claimed.token, ok=False, error=error)])
    assert store.fire_schedule("backup", now - 3600, now + 3600, None) == "dropped"
    page.set_viewport_size({"width": 1280, "height": 800})
    _log_in(page, cluster.base, OPERATOR, "/schedules")
    failure = page.locator("#schedules tr[data-schedule='backup'] .last-error")
    expect(failure).to_be_visible()
    assert failure.inner_text().startswith("OSError: the backup volume")
    assert "second line" not in failure.inner_text()
    assert failure.get_attribute("href") == "/jobs/backup-1"
    no_job = page.locator("#schedules tr[data-schedule='backup'] .no-job")
    expect(no_job).to_have_text("no job")
    widths = page.eval_on_selector(
        "#schedules", "t => [t.getBoundingClientRect().right, document.documentElement.clientWidth]"
    )
    assert widths[0] <= widths[1], f"the table overflows the page: {widths}"
    failure.click()
    expect(page).to_have_url(f"{cluster.base}/jobs/backup-1")
