"""The overview's chart and counts in real headless Chromium (see
test_web_browser.py for the server, worker and browser fixtures): axes with
readable labels, a legend with numbers, failed attempts apart from failed jobs."""

from __future__ import annotations

import re
from typing import Any

import pytest

from helpers import wait_for
from rota.models import JobState
from web.support import OPERATOR
from web.test_web_browser import TIMEOUT_MS, Cluster, _log_in, browser, cluster, expect, page

pytestmark = pytest.mark.browser

__all__ = ["browser", "cluster", "page"]  # fixtures used here by name


def _labels(page: Any, selector: str) -> list[str]:
    texts: list[str] = page.eval_on_selector_all(selector, "els => els.map(e => e.textContent)")
    return texts


def _boxes(page: Any, selector: str) -> list[dict[str, float]]:
    boxes: list[dict[str, float]] = page.eval_on_selector_all(
        selector,
        "els => els.map(e => { const r = e.getBoundingClientRect();"
        " return {x: r.x, y: r.y, width: r.width, height: r.height}; })",
    )
    return boxes


def _check_axes(page: Any) -> None:
    expect(page.locator("#chart #time-axis")).to_have_count(1)
    expect(page.locator("#chart #count-axis")).to_have_count(1)
    counts = [int(t) for t in _labels(page, "#count-ticks text")]
    assert counts[0] == 0 and counts == sorted(counts) and len(counts) >= 2
    assert counts[-1] == int(page.locator("#chart-scale").inner_text())
    times = _labels(page, "#time-ticks text")
    assert len(times) == 6 and all(re.fullmatch(r"\d\d:\d0", t) for t in times), times
    chart = _boxes(page, "#chart")[0]
    for box in _boxes(page, "#count-ticks text") + _boxes(page, "#time-ticks text"):
        assert 6 <= box["height"] <= 30, box  # drawn at a readable size, not squashed
        assert chart["x"] <= box["x"] and box["x"] + box["width"] <= chart["x"] + chart["width"]
        assert chart["y"] <= box["y"] and box["y"] + box["height"] <= chart["y"] + chart["height"]


def test_chart_has_axes_and_a_legend_with_numbers(cluster: Cluster, page: Any) -> None:
    _log_in(page, cluster.base, OPERATOR)
    _check_axes(page)
    expect(page.locator("#chart-legend")).to_contain_text("succeeded")
    expect(page.locator("#chart-legend")).to_contain_text("failed attempts")
    expect(page.locator("#legend-succeeded")).to_have_text("0")
    expect(page.locator("#legend-failed")).to_have_text("0")

    cluster.order.send_many([(n,) for n in range(7)])
    failing = cluster.flaky.send("beta")  # fails: upstream is down, no retries left
    wait_for(
        lambda: cluster.app.store.get_job(failing.id).state is JobState.FAILED,  # type: ignore[union-attr]
        timeout=TIMEOUT_MS / 1000,
        what="the flaky job to fail",
    )

    # The script redraws chart, axes and legend from /api/stats/live every 2 s.
    expect(page.locator("#legend-succeeded")).to_have_text("7", timeout=TIMEOUT_MS)
    expect(page.locator("#legend-failed")).to_have_text("1", timeout=TIMEOUT_MS)
    expect(page.locator("#failed-0")).to_have_text("1")
    _check_axes(page)
    assert int(page.locator("#chart-scale").inner_text()) >= 8


def test_the_day_chart_draws_half_hours_and_follows_the_live_counts(
    cluster: Cluster, page: Any
) -> None:
    _log_in(page, cluster.base, OPERATOR)
    page.click("#chart-periods a")  # "last day"
    expect(page).to_have_url(f"{cluster.base}/?period=day")
    expect(page.locator("h2").filter(has_text="Jobs per half hour, last day")).to_have_count(1)
    expect(page.locator("#chart-bars > g")).to_have_count(48)
    times = _labels(page, "#time-ticks text")
    assert len(times) == 6 and all(re.fullmatch(r"\d\d:00", t) for t in times), times
    expect(page.locator("#legend-succeeded")).to_have_text("0")

    cluster.order.send_many([(n,) for n in range(3)])
    # redrawn from /api/stats/live's day series: the last bar holds them
    expect(page.locator("#legend-succeeded")).to_have_text("3", timeout=TIMEOUT_MS)
    expect(page.locator("#chart-bars > g")).to_have_count(48)
    last = page.locator("#chart-bars > g title").last.text_content() or ""
    assert re.fullmatch(r"\d\d:[03]0-\d\d:[03]0 UTC: 3 succeeded, 0 failed attempts", last), last
    assert len(_labels(page, "#time-ticks text")) == 6
    page.click("#chart-periods a")  # back to the last hour
    expect(page.locator("#chart-bars > g")).to_have_count(60)


def test_overview_labels_failed_attempts_apart_from_failed_jobs(
    cluster: Cluster, page: Any
) -> None:
    failing = cluster.flaky.send("gamma")
    wait_for(
        lambda: cluster.app.store.get_job(failing.id).state is JobState.FAILED,  # type: ignore[union-attr]
        timeout=TIMEOUT_MS / 1000,
        what="the flaky job to fail",
    )
    _log_in(page, cluster.base, OPERATOR)
    card = page.locator("#failed-jobs-card")
    expect(card.locator("h2")).to_have_text("Failed jobs")
    expect(page.locator("#failed-jobs")).to_have_text("1")
    expect(page.locator("#failed-jobs")).to_have_class("bad")
    expect(page.locator("section.cards .card").first).to_contain_text("failed attempts")
    expect(page.locator("#queues thead")).to_contain_text("5 min ok / failed attempts")

    page.click("#failed-jobs")
    rows = page.locator("#jobs tbody tr")
    expect(rows).to_have_count(1)
    short = rows.first.locator("a.mono").inner_text()
    assert len(short) == 12 and failing.id.startswith(short)
    page.goto(f"{cluster.base}/jobs/{short}")
    expect(page.locator("h1 .mono")).to_have_text(failing.id)
    expect(page.locator("#attempt")).to_have_text("1/1")
    expect(page.locator("#error")).to_have_text("ValueError: upstream down for gamma")
