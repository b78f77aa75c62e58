"""The crawl pages and their JSON against a finished real crawl (see
web/crawl_lab.py), on SQLite and Redis: each host's figures equal what its
server logged, robots.txt states, levels and queue depth as the store holds
them; a viewer may look; an app without crawls has no link to them."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

import rota
from backends import drop_store, store_url
from rota.crawl import report
from rota.models import JobState
from rota.web import create_app
from web.crawl_lab import Crawled, crawled
from web.support import BASE, OPERATOR, SECRET, VIEWER, bearer, expect_error, login

PER_HOST = 2  # the crawl app's per_host


@pytest.fixture(scope="module", params=["sqlite", "redis"])
def crawl(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Crawled]:
    workdir = tmp_path_factory.mktemp("crawl")
    url = store_url(str(request.param), workdir)
    try:
        with crawled(url, workdir) as done:
            yield done
    finally:
        drop_store(str(request.param), url)


@pytest.fixture
def client(crawl: Crawled) -> Iterator[TestClient]:
    asgi = create_app(crawl.module.app, token=OPERATOR, viewer_token=VIEWER, secret=SECRET)
    with TestClient(asgi, base_url=BASE, follow_redirects=False, client=("127.0.0.1", 50000)) as c:
        yield c


def _hosts(client: TestClient) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    answer = client.get("/api/crawls/site", headers=bearer(VIEWER))
    assert answer.status_code == 200, answer.text
    data: dict[str, Any] = answer.json()
    return data, {h["host"]: h for h in data["report"]["hosts"]}


def test_each_hosts_figures_are_what_its_server_answered(
    crawl: Crawled, client: TestClient
) -> None:
    data, hosts = _hosts(client)
    site = crawl.site
    assert set(hosts) == {site.key("a"), site.key("b"), site.key("c"), crawl.dead}
    for label in ("a", "b"):
        h = hosts[site.key(label)]
        statuses = Counter(r.status for r in crawl.pages(label))
        answered = sum(n for status, n in statuses.items() if status != 429)
        assert h["fetched"] == answered > 0, label
        assert h["answers"].get("2xx", 0) == statuses[200], label
        assert h["answers"].get("4xx", 0) == statuses[404], label
        assert h["errors"] == ({"throttled": statuses[429]} if statuses[429] else {}), label
        assert (h["queued"], h["scheduled"], h["running"]) == (0, 0, 0), label
        assert h["ceiling"] == PER_HOST
    assert Counter(r.status for r in crawl.pages("b"))[404] == 1  # /gone
    assert hosts[site.key("b")]["errors"] == {"throttled": 1}
    for key in (site.key("c"), crawl.dead):
        assert hosts[key]["fetched"] == 0 and hosts[key]["answers"] == {}
    assert crawl.pages("c") == []

    # level, rate, override: the host's limit key as the store holds it. The
    # worker's retention pass drops an idle key (its state is a new key's), so
    # a host done early may have none left: its row then shows none.
    limits = {info.key: info for info in crawl.store.limits()}
    for key, h in hosts.items():
        info = limits.get(key)
        held = (info.concurrency, info.override, info.rate_in_force) if info else (None,) * 3
        assert (h["level"], h["override"], h["rate"]) == held, key
        if info is not None and key in (site.key("a"), site.key("b")):
            assert 1 <= h["level"] <= PER_HOST
            # the crawler's 10/s, paced to the level: b may end before it ramps
            # back up after its throttle (how many of its pages are left varies)
            assert h["rate"] == 10.0 * h["level"] / PER_HOST, key

    # all time, per minute: the store's attempt counts of site.fetch
    fetched = sum(hosts[site.key(label)]["fetched"] for label in ("a", "b"))
    summary = data["report"]["summary"]
    assert (summary["succeeded"], summary["failed_attempts"]) == (fetched, 1)
    assert summary["last_hour"] == fetched and summary["declared"] is True
    assert len(data["chart"]) == 60
    assert sum(p["succeeded"] for p in data["chart"]) == fetched
    assert sum(p["failed_attempts"] for p in data["chart"]) == 1
    assert data["report"]["sampled"] == []

    live = client.get("/api/crawls/site/live", headers=bearer(VIEWER)).json()
    assert live["chart"] == data["chart"]


def test_robots_states_with_their_status_and_age(crawl: Crawled, client: TestClient) -> None:
    data, hosts = _hosts(client)
    site, now = crawl.site, data["report"]["now"]
    robots = {key: h["robots"] for key, h in hosts.items()}
    assert (robots[site.key("a")]["state"], robots[site.key("a")]["status"]) == ("fetched", 200)
    assert (robots[site.key("b")]["state"], robots[site.key("b")]["status"]) == ("allows", 404)
    assert (robots[site.key("c")]["state"], robots[site.key("c")]["status"]) == (
        "disallow-all",
        200,
    )
    for label in ("a", "b", "c"):
        asked = [r for r in crawl.log if r.host == label and r.path == "/robots.txt"]
        fetched_at = robots[site.key(label)]["fetched_at"]
        assert len(asked) == 1 and asked[0].start <= fetched_at <= now
    # The dead origin's robots job is tried again after each refusal, and
    # fails for good once its retries run out: a slow crawl outlasts them.
    # The worker is stopped, so the job's stored state no longer moves.
    dead = robots[crawl.dead]
    job = crawl.store.get_job(dead["job"])
    assert job is not None and job.state not in (JobState.SUCCEEDED, JobState.CANCELLED)
    assert dead["state"] == ("failed" if job.state is JobState.FAILED else "waiting")
    assert dead["fetched_at"] is None
    assert dead["error"].startswith("FetchFailed: connection: ")


def test_a_viewer_sees_the_host_table_and_the_chart(crawl: Crawled, client: TestClient) -> None:
    login(client, VIEWER)
    overview = client.get("/")
    assert '<a href="/crawls"' in overview.text
    listing = client.get("/crawls")
    assert listing.status_code == 200
    _, hosts = _hosts(client)
    fetched = sum(h["fetched"] for h in hosts.values())
    row = re.search(r'<tr data-crawl="site">.*?</tr>', listing.text, re.S)
    assert row and f'<td class="num succeeded">{fetched}</td>' in row.group(0)

    page = client.get("/crawls/site")
    assert page.status_code == 200
    html = page.text
    assert 'aria-current="page">Crawls</a>' in html
    for key, h in hosts.items():
        row = re.search(rf'<tr data-host="{re.escape(key)}">.*?</tr>', html, re.S)
        assert row, key
        assert f'<td class="num fetched">{h["fetched"]}</td>' in row.group(0)
        assert f"robots-{h['robots']['state']}" in row.group(0)
    b_row = re.search(rf'<tr data-host="{re.escape(crawl.site.key("b"))}">.*?</tr>', html, re.S)
    assert b_row and re.search(r'data-kind="throttled">1</td>', b_row.group(0))
    assert 'data-src="/api/crawls/site/live"' in html
    assert html.count('<rect class="ok"') == 60
    assert client.get("/crawls/nothing").status_code == 404


def test_a_dashboard_without_the_crawler_reads_the_crawl_from_the_store(
    crawl: Crawled, client: TestClient
) -> None:
    """``rota web`` over an app that does not declare the crawler: the same
    figures, without the ceiling (the crawler's setting)."""
    _, declared = _hosts(client)
    bare = rota.App(crawl.module.app.url)
    try:
        with TestClient(
            create_app(bare), base_url=BASE, follow_redirects=False, client=("127.0.0.1", 50000)
        ) as c:
            [summary] = c.get("/api/crawls").json()
            assert (summary["name"], summary["declared"]) == ("site", False)
            assert summary["queues"] == ["crawl"]
            data = c.get("/api/crawls/site").json()
            assert 'href="/crawls"' in c.get("/").text
    finally:
        bare.close()
    for h in data["report"]["hosts"]:
        assert h["ceiling"] is None
        assert h | {"ceiling": PER_HOST} == declared[h["host"]], h["host"]


def test_figures_beyond_the_sample_are_marked(
    crawl: Crawled, client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(report, "SAMPLE", 2)
    data, hosts = _hosts(client)
    assert data["report"]["sampled"] == ["succeeded"]
    assert sum(h["fetched"] for h in hosts.values()) == 2
    assert "the 2 newest read per state" in client.get(
        "/crawls/site", headers=bearer(VIEWER)
    ).text.replace("\n", " ")


def test_queue_depth_and_a_pause_as_the_store_holds_them(
    crawl: Crawled, client: TestClient
) -> None:
    """Last in the module: it adds jobs, on a queue no worker took from (a
    Redis store hands a new job, already claimed, to a worker registered as
    idle, and the killed worker's registration outlives it for a while)."""
    site, app = crawl.site, crawl.module.app
    fetch = crawl.module.crawler.fetch_task.options(queue="held")
    for path in ("/n1", "/n2", "/n3"):
        fetch.send(site.url("a", path), 1)
    fetch.send_in(600, site.url("a", "/later"), 1)
    app.store.set_limit(site.key("b"), 0)  # what the crawler does on a 429
    resume = app.get_task("site.resume").options(queue="held").send_in(60, site.key("b"), 1)
    _, hosts = _hosts(client)
    a, b = hosts[site.key("a")], hosts[site.key("b")]
    assert (a["queued"], a["scheduled"]) == (3, 1)
    assert (b["level"], b["override"]) == (0, 0)
    assert b["paused_until"] == resume.job().run_at
    assert resume.job().state is JobState.SCHEDULED
    html = client.get("/crawls/site", headers=bearer(VIEWER)).text
    row = re.search(rf'<tr data-host="{re.escape(site.key("b"))}">.*?</tr>', html, re.S)
    assert row and "paused</span>" in row.group(0)


def test_an_app_without_crawls_has_no_crawl_pages(tmp_path: Path) -> None:
    app = rota.App(f"sqlite:///{tmp_path / 'rota.db'}")

    @app.task(name="shop.fetch")  # a fetch task alone is not a crawl
    def fetch(n: int) -> int:
        return n

    fetch.send(1)
    try:
        with TestClient(
            create_app(app), base_url=BASE, follow_redirects=False, client=("127.0.0.1", 50000)
        ) as c:
            assert 'href="/crawls"' not in c.get("/").text
            assert c.get("/api/crawls").json() == []
            expect_error(c.get("/api/crawls/shop"), 404, "crawl 'shop' not found")
            expect_error(c.get("/api/crawls/shop/live"), 404, "crawl 'shop' not found")
            page = c.get("/crawls").text
            assert "No crawls" in page
            assert "<title>Crawls · rota</title>" in page
            assert 'class="active"' not in page  # no tab of the navigation is this page
    finally:
        app.close()
