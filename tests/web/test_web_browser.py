"""The dashboard in real headless Chromium, against a real uvicorn server and worker.

Chromium is Debian's ``chromium`` package (``apt-get install -y chromium``),
driven through Playwright's sync API; ``ROTA_CHROMIUM`` may point elsewhere.
Without it these tests skip locally and fail in CI.
"""

from __future__ import annotations

import csv
import os
import shutil
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import uvicorn

import rota
from backends import IN_CI
from helpers import wait_for
from rota.admin import Actor
from rota.models import JobState
from rota.web import create_app
from rota.worker import Worker
from web.support import OPERATOR, SECRET, VIEWER, free_port

pytestmark = pytest.mark.browser

playwright_api = pytest.importorskip("playwright.sync_api")
expect = playwright_api.expect

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
TIMEOUT_MS = 15_000


def _chromium() -> str:
    path = os.environ.get("ROTA_CHROMIUM") or shutil.which("chromium")
    if not path:
        message = "Chromium not found: apt-get install -y chromium (or set ROTA_CHROMIUM)"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    return path


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One headless Chromium for the module."""
    with playwright_api.sync_playwright() as p:
        launched = p.chromium.launch(executable_path=_chromium(), args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@dataclass
class Cluster:
    """A store, a worker thread, a dashboard server, and the switch of a flaky task."""

    app: rota.App
    base: str
    order: rota.Task[[int], int]
    flaky: rota.Task[[str], str]
    side: rota.Task[[int], int]
    broken: threading.Event


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    """A real worker (threads) and uvicorn serving the dashboard with both tokens."""
    app = rota.App(f"sqlite:///{tmp_path / 'rota.db'}")
    broken = threading.Event()
    broken.set()

    @app.task(queue="orders", name="shop.order")
    def order(n: int) -> int:
        return n * 2

    @app.task(queue="orders", name="shop.flaky")
    def flaky(key: str) -> str:
        if broken.is_set():
            raise ValueError(f"upstream down for {key}")
        return f"ok {key}"

    @app.task(queue="side", name="side.ping")
    def side(n: int) -> int:
        return n

    worker = Worker(app, queues=["orders", "side"], concurrency=4, grace=5, heartbeat=0.5)
    work_thread = threading.Thread(target=worker.run, name="test-worker", daemon=True)
    work_thread.start()

    port = free_port()
    asgi = create_app(app, token=OPERATOR, viewer_token=VIEWER, secret=SECRET)
    server = uvicorn.Server(uvicorn.Config(asgi, host="127.0.0.1", port=port, log_level="warning"))
    serve_thread = threading.Thread(target=server.run, name="test-uvicorn", daemon=True)
    serve_thread.start()
    try:
        wait_for(lambda: server.started, timeout=20, what="uvicorn to start")
        yield Cluster(app, f"http://127.0.0.1:{port}", order, flaky, side, broken)
    finally:
        server.should_exit = True
        worker.stop()
        serve_thread.join(timeout=20)
        work_thread.join(timeout=20)
        app.close()
    assert not serve_thread.is_alive() and not work_thread.is_alive()


@pytest.fixture
def page(browser: Any, tmp_path: Path) -> Iterator[Any]:
    """A fresh browser context (no cookies) and page; downloads land in tmp_path."""
    context = browser.new_context(accept_downloads=True)
    context.set_default_timeout(TIMEOUT_MS)
    opened = context.new_page()
    yield opened
    context.close()


def _log_in(page: Any, base: str, token: str, path: str = "/") -> None:
    page.goto(base + path)
    expect(page).to_have_url(f"{base}/login?next={path.replace('/', '%2F')}")
    page.fill("input[name=token]", token)
    page.click("form[action='/login'] button[type=submit]")
    expect(page).to_have_url(base + path)


def _reload_until(page: Any, condition: Callable[[], bool], what: str) -> None:
    """Reload a server-rendered page until ``condition`` holds (bounded)."""

    def check() -> bool:
        page.reload()
        return condition()

    wait_for(check, timeout=TIMEOUT_MS / 1000, interval=0.2, what=what)


def _state(cluster: Cluster, job_id: str) -> JobState | None:
    job = cluster.app.store.get_job(job_id)
    return None if job is None else job.state


def test_log_in_and_watch_the_worker_process_jobs_live(
    cluster: Cluster, page: Any, tmp_path: Path
) -> None:
    _log_in(page, cluster.base, OPERATOR)
    expect(page.locator(".role")).to_have_text("operator")
    expect(page.locator("#succeeded-0")).to_have_text("0")
    handles = cluster.order.send_many([(n,) for n in range(5)])

    # The overview updates itself (the script polls /api/stats/live every 2 s).
    expect(page.locator("#succeeded-0")).to_have_text("5", timeout=TIMEOUT_MS)
    expect(page.locator("#workers-online")).to_have_text("1")
    heights = page.eval_on_selector_all(
        "#chart-bars rect.ok", "rects => rects.map(r => Number(r.getAttribute('height')))"
    )
    assert len(heights) == 60 and max(heights) > 0
    page.screenshot(path=str(tmp_path / "overview.png"), full_page=True)
    assert (tmp_path / "overview.png").stat().st_size > 0

    page.click("nav >> text=Jobs")
    page.select_option("select[name=state]", "succeeded")
    page.click("form.filters button[type=submit]")
    rows = page.locator("#jobs tbody tr")
    expect(rows).to_have_count(5)
    assert sorted(rows.evaluate_all("rs => rs.map(r => r.dataset.job)")) == sorted(
        h.id for h in handles
    )
    page.click(f"a[href='/jobs/{handles[3].id}']")
    expect(page.locator("#result")).to_contain_text("6")
    expect(page.locator("h1 .state")).to_have_text("succeeded")

    page.click("nav >> text=Workers")
    expect(page.locator("#workers tbody tr")).to_have_count(1)
    expect(page.locator("#workers tbody tr .badge")).to_have_text("online")


def test_retry_a_failed_job_and_see_it_succeed(cluster: Cluster, page: Any) -> None:
    handle = cluster.flaky.send("alpha")
    wait_for(lambda: _state(cluster, handle.id) is JobState.FAILED, what="the job to fail")
    _log_in(page, cluster.base, OPERATOR, f"/jobs/{handle.id}")
    expect(page.locator("h1 .state")).to_have_text("failed")
    expect(page.locator("#error")).to_have_text("ValueError: upstream down for alpha")
    expect(page.locator("#traceback")).to_contain_text("Traceback")

    cluster.broken.clear()  # upstream is back
    page.click("button:text('Retry')")
    expect(page.locator(".flash")).to_have_text(f"Job {handle.id} queued again.")
    _reload_until(
        page,
        lambda: page.locator("h1 .state").inner_text() == "succeeded",
        "the retried job to succeed",
    )
    expect(page.locator("#result")).to_contain_text("ok alpha")
    rows = page.locator("#history tbody tr")
    expect(rows).to_have_count(3)  # failed, requeued by the operator, then succeeded
    expect(rows.nth(1)).to_contain_text("requeued")
    expect(rows.nth(1)).to_contain_text("by token")  # who: the token it logged in with


def test_pause_a_queue_and_see_claiming_stop(cluster: Cluster, page: Any) -> None:
    cluster.order.send(1)
    _log_in(page, cluster.base, OPERATOR, "/queues")
    _reload_until(page, lambda: page.locator("tr[data-queue='orders']").count() == 1, "orders")
    row = page.locator("tr[data-queue='orders']")
    row.locator("button:text('Pause')").click()
    expect(page.locator(".flash")).to_have_text("Queue orders paused.")
    expect(row.locator(".badge")).to_have_text("paused")

    held = cluster.order.send(21)
    probe = cluster.side.send(1)  # the same worker serves "side": once this is done,
    wait_for(  # the worker has claimed since `held` was sent, and skipped it
        lambda: _state(cluster, probe.id) is JobState.SUCCEEDED, what="the probe job"
    )
    assert _state(cluster, held.id) is JobState.QUEUED
    page.reload()
    expect(row.locator("td.num").nth(1)).to_have_text("1")  # one queued

    row.locator("button:text('Resume')").click()
    expect(page.locator(".flash")).to_have_text("Queue orders resumed.")
    wait_for(lambda: _state(cluster, held.id) is JobState.SUCCEEDED, what="the held job")


def test_download_a_csv_export(cluster: Cluster, page: Any, tmp_path: Path) -> None:
    handles = cluster.order.send_many([(n,) for n in (10, 20, 30)])
    cluster.side.send(7)
    wait_for(
        lambda: all(_state(cluster, h.id) is JobState.SUCCEEDED for h in handles), what="orders"
    )
    _log_in(page, cluster.base, VIEWER, "/export")  # reading results needs no operator
    page.fill("#export input[name=queue]", "orders")
    page.select_option("#export select[name=format]", "csv")
    with page.expect_download() as info:
        page.click("#download")
    download = info.value
    assert download.suggested_filename == "results-orders.csv"
    target = tmp_path / "export.csv"
    download.save_as(str(target))
    with target.open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert sorted((r["args"], r["result"]) for r in rows) == [
        ("[10]", "20"),
        ("[20]", "40"),
        ("[30]", "60"),
    ]
    assert {r["id"] for r in rows} == {h.id for h in handles}


def test_viewer_sees_no_actions(cluster: Cluster, page: Any) -> None:
    cluster.order.send(1)
    _log_in(page, cluster.base, VIEWER, "/queues")
    _reload_until(page, lambda: page.locator("tr[data-queue='orders']").count() == 1, "orders")
    expect(page.locator("tr[data-queue='orders'] button")).to_have_count(0)
    expect(page.locator(".role")).to_have_text("viewer")
    page.click("button:text('Log out')")
    expect(page).to_have_url(cluster.base + "/login")


def test_the_job_page_shows_a_running_jobs_output_as_it_is_written(
    cluster: Cluster, page: Any
) -> None:
    said_more = threading.Event()
    may_end = threading.Event()

    @cluster.app.task(queue="side", name="side.talk")
    def talk() -> str:
        # The logger, not print: pytest swaps sys.stdout between a test's phases,
        # over the worker's route (prints are covered by tests/integration).
        rota.current_job().logger.warning("first line")
        said_more.wait(TIMEOUT_MS / 1000)
        rota.current_job().logger.warning("second line")
        may_end.wait(TIMEOUT_MS / 1000)
        return "said"

    handle = talk.send()
    try:
        wait_for(
            lambda: any("first line" in c.data for c in cluster.app.store.job_logs(handle.id)),
            timeout=TIMEOUT_MS / 1000,
            what="the job's first line in the store",
        )
        _log_in(page, cluster.base, VIEWER, f"/jobs/{handle.id}")
        log = page.locator("#job-log")
        status = page.locator("#job-log-status")
        expect(log).to_contain_text("--- attempt 1 ---")
        expect(log).to_contain_text("first line")
        expect(status).to_have_text("Following while the job runs.")
        expect(log).not_to_contain_text("second line")

        said_more.set()  # the line appears without a reload
        expect(log).to_contain_text("second line")
        assert page.locator("#job-log .joblog-attempt").count() == 1
        expect(page.locator("h1 .state")).to_have_text("running")
        may_end.set()
        expect(status).to_have_text("The job has ended: reload for its outcome.")
    finally:
        said_more.set()
        may_end.set()
    assert handle.result(timeout=TIMEOUT_MS / 1000) == "said"
    page.click("#job-log-status a")  # an ended job's page: its outcome, its output, not followed
    expect(page).to_have_url(f"{cluster.base}/jobs/{handle.id}")
    expect(page.locator("#job-log")).to_contain_text("second line")
    expect(page.locator("#job-log-status")).to_have_text("")
    expect(page.locator("h1 .state")).to_have_text("succeeded")
    expect(page.locator("#result")).to_contain_text("said")


def test_the_job_page_heads_the_output_of_a_run_after_a_retry_by_hand_apart(
    cluster: Cluster, page: Any
) -> None:
    runs: list[int] = []
    may_talk = threading.Event()
    may_end = threading.Event()

    @cluster.app.task(queue="side", name="side.again", retries=0)
    def again() -> str:
        runs.append(1)
        if len(runs) == 1:
            rota.current_job().logger.warning("first run")
            raise ValueError("no")
        may_talk.wait(TIMEOUT_MS / 1000)
        rota.current_job().logger.warning("second run")
        may_end.wait(TIMEOUT_MS / 1000)
        return "done"

    handle = again.send()
    try:
        wait_for(lambda: handle.status() == "failed", timeout=20, what="the first run")
        cluster.app.admin.retry_job(handle.id, by=Actor(name="ann", origin="web"))
        wait_for(lambda: len(runs) == 2, timeout=20, what="the second run")
        _log_in(page, cluster.base, VIEWER, f"/jobs/{handle.id}")
        log = page.locator("#job-log")
        headings = page.locator("#job-log .joblog-attempt")
        expect(log).to_contain_text("first run")
        expect(headings).to_have_count(1)
        may_talk.set()  # the second run's line arrives while the page follows
        expect(log).to_contain_text("second run")
        expect(headings).to_have_count(2)
        expect(headings.nth(0)).to_have_text("--- attempt 1 ---")
        expect(headings.nth(1)).to_contain_text("--- attempt 1, after requeue by ann at ")
        may_end.set()
        expect(page.locator("#job-log-status")).to_contain_text("The job has ended")
        page.reload()  # rendered whole by the server: the same headings
        expect(headings).to_have_count(2)
        expect(headings.nth(1)).to_contain_text("--- attempt 1, after requeue by ann at ")
    finally:
        may_talk.set()
        may_end.set()


def test_a_job_without_output_shows_no_empty_panel(cluster: Cluster, page: Any) -> None:
    handle = cluster.side.send(7)
    assert handle.result(timeout=TIMEOUT_MS / 1000) == 7
    _log_in(page, cluster.base, VIEWER, f"/jobs/{handle.id}")
    expect(page.locator("#job-log-status")).to_have_text("No output.")
    expect(page.locator("#job-log")).to_be_hidden()


def test_a_job_not_started_says_so_while_its_page_follows_it(cluster: Cluster, page: Any) -> None:
    handle = cluster.side.send_in(3600, 1)
    _log_in(page, cluster.base, VIEWER, f"/jobs/{handle.id}")
    status = page.locator("#job-log-status")
    said = "The job has not started: it is due in 60 min. Its output shows here as it runs."
    expect(status).to_have_text(said)
    for _ in range(2):  # the script asks for output every second: the words stay
        with page.expect_response(lambda answer: answer.url.endswith("/logs?after=0")):
            pass
    expect(status).to_have_text(said)
    expect(page).to_have_title(f"Job {handle.id[:12]} · side.ping · rota")
