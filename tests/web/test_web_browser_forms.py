"""The dashboard's forms in real headless Chromium: an operator sends a job and
sees a real worker process run it, creates an ``every 1 s`` schedule and sees
a real ``rota scheduler`` process fire it, does both with a command line (run
by the worker, started with ``--commands``); a viewer sees neither form.

Chromium as in ``test_web_browser.py`` (skips locally without it, fails in CI).
"""

from __future__ import annotations

import itertools
import re
import sys
import textwrap
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import uvicorn

import rota
from helpers import wait_for
from procs import Processes
from rota._loader import load_app
from rota.models import JobQuery, JobState
from rota.scheduling.scheduler import Scheduler
from rota.web import create_app
from web.support import OPERATOR, SECRET, VIEWER, free_port
from web.test_web_browser import CHROMIUM_ARGS, TIMEOUT_MS, _chromium, expect, playwright_api

pytestmark = pytest.mark.browser

APP_SOURCE = """
import rota

app = rota.App("{url}")


@app.task(name="shop.total", queue="orders")
def total(prices, discount=0):
    return sum(prices) - discount


@app.task(name="shop.tick")
def tick(n):
    return n
"""


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One headless Chromium for the module."""
    with playwright_api.sync_playwright() as p:
        launched = p.chromium.launch(executable_path=_chromium(), args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh browser context (no cookies) and page."""
    context = browser.new_context()
    context.set_default_timeout(TIMEOUT_MS)
    yield context.new_page()
    context.close()


@dataclass
class Site:
    """The dashboard's address and the app it serves (also run by the processes)."""

    base: str
    app: rota.App
    processes: Processes


@pytest.fixture
def site(tmp_path: Path) -> Iterator[Site]:
    """An app file run by a real ``rota worker`` and ``rota scheduler``, and
    uvicorn serving its dashboard with an operator and a viewer token."""
    url = f"sqlite:///{tmp_path / 'rota.db'}"
    source = tmp_path / "formsapp.py"
    source.write_text(textwrap.dedent(APP_SOURCE.format(url=url)))
    saved_path = list(sys.path)
    app = load_app(f"{source}:app")
    processes = Processes(tmp_path)
    port = free_port()
    asgi = create_app(app, token=OPERATOR, viewer_token=VIEWER, secret=SECRET)
    server = uvicorn.Server(uvicorn.Config(asgi, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, name="test-uvicorn", daemon=True)
    try:
        app.store.now()  # creates the store before the processes open it
        processes.rota("worker", f"{source}:app", "--concurrency", "2", "--commands")
        processes.rota("scheduler", f"{source}:app")
        thread.start()
        wait_for(lambda: server.started, timeout=20, what="uvicorn to start")
        wait_for(lambda: app.store.workers(), timeout=30, what="the worker's first heartbeat")
        yield Site(f"http://127.0.0.1:{port}", app, processes)
    finally:
        server.should_exit = True
        processes.stop_all()
        thread.join(timeout=20)
        app.close()
        sys.modules.pop("formsapp", None)
        sys.path[:] = saved_path
    assert not thread.is_alive()


def _log_in(page: Any, base: str, token: str, path: str) -> None:
    page.goto(base + path)
    page.fill("input[name=token]", token)
    page.press("input[name=token]", "Enter")
    expect(page).to_have_url(base + path)


def _reload_until(page: Any, locator: str, text: str) -> None:
    """Reload a server-rendered page until ``locator`` shows ``text`` (bounded)."""

    def shown() -> bool:
        page.reload()
        return text in (page.locator(locator).text_content() or "")

    wait_for(shown, timeout=TIMEOUT_MS / 1000, interval=0.2, what=f"{locator} to show {text!r}")


def test_operator_sends_a_job_from_the_form_and_sees_it_succeed(site: Site, page: Any) -> None:
    _log_in(page, site.base, OPERATOR, "/")
    page.click("nav >> text=Send")
    expect(page).to_have_url(site.base + "/send")

    # A mistake first: shown beside its field, nothing sent.
    page.select_option("select[name=task]", "shop.total")
    page.fill("textarea[name=args]", "[[3, 4.5], NaN]")
    page.click("#send")
    expect(page.locator("#error-args")).to_have_text(
        "args: NaN is not JSON (JSON has no NaN or infinity)"
    )
    assert site.app.store.queues() == []

    page.fill("textarea[name=args]", "[[3, 4.5]]")
    page.fill("textarea[name=kwargs]", '{"discount": 0.5}')
    page.fill("input[name=priority]", "3")
    page.click("#send")
    expect(page).to_have_url(re.compile(re.escape(site.base) + r"/jobs/[0-9a-f]{32}$"))
    job_id = page.url.rsplit("/", 1)[1]
    expect(page.locator(".flash")).to_have_text(f"Sent job {job_id}.")
    _reload_until(page, "h1 .state", "succeeded")
    expect(page.locator("#result")).to_contain_text("7")
    job = site.app.store.get_job(job_id)
    assert job is not None and (job.queue, job.priority, job.result) == ("orders", 3, 7.0)


def test_operator_creates_a_schedule_and_sees_it_fire(site: Site, page: Any) -> None:
    _log_in(page, site.base, OPERATOR, "/schedules")
    page.click("#new-schedule")
    page.fill("input[name=name]", "heartbeat")
    page.select_option("select[name=task]", "shop.tick")
    page.select_option("select[name=kind]", "every")
    page.fill("input[name=interval]", "1")
    page.fill("textarea[name=args]", "[42]")
    page.click("#preview")
    fires = page.locator("#next-fires time")
    expect(fires).to_have_count(3)
    times = fires.evaluate_all("ts => ts.map(t => Date.parse(t.dateTime) / 1000)")
    assert [b - a for a, b in itertools.pairwise(times)] == [1, 1]
    assert site.app.store.schedules() == []  # a preview writes nothing

    page.click("#save")
    expect(page).to_have_url(site.base + "/schedules")
    expect(page.locator(".flash")).to_have_text("Schedule heartbeat created.")
    row = "tr[data-schedule=heartbeat]"
    expect(page.locator(f"{row} .trigger")).to_have_text("every second")
    _reload_until(page, f"{row} td:nth-child(6)", "succeeded")  # fired, and the job ran

    jobs = site.app.store.list_jobs(JobQuery(schedule="heartbeat"), limit=10).jobs
    assert jobs and all(j.task == "shop.tick" and j.args == [42] for j in jobs)
    assert any(j.state is JobState.SUCCEEDED and j.result == 42 for j in jobs)

    page.click(f"{row} td:first-child a")  # its own page: next fires, runs charted
    expect(page).to_have_url(site.base + "/schedules/heartbeat")
    expect(page.locator("#upcoming time")).to_have_count(5)
    expect(page.locator("#runs-chart rect.run-succeeded").first).to_be_visible()
    page.locator("#runs-chart rect.run-succeeded").first.click()
    expect(page).to_have_url(re.compile(re.escape(site.base) + r"/jobs/\w+"))
    expect(page.locator("#result")).to_contain_text("42")


def test_operator_adds_a_command_schedule_and_sends_a_command(site: Site, page: Any) -> None:
    _log_in(page, site.base, OPERATOR, "/schedules")
    page.click("#new-schedule")
    page.fill("input[name=name]", "greeting")
    page.fill("input[name=command]", f'{sys.executable} -c \'print("hello" + " cron")')
    page.click("#save")  # the quote is not closed: refused beside the field
    expect(page.locator("#error-command")).to_contain_text("cannot be split")
    assert site.app.store.schedules() == []

    line = f'{sys.executable} -c \'print("hello" + " cron")\''
    page.fill("input[name=command]", line)
    page.select_option("select[name=kind]", "every")
    page.fill("input[name=interval]", "1")
    page.click("#save")
    expect(page).to_have_url(site.base + "/schedules")
    expect(page.locator(".flash")).to_have_text("Schedule greeting created.")
    _reload_until(page, "tr[data-schedule=greeting] td:nth-child(6)", "succeeded")
    expect(page.locator("tr[data-schedule=greeting] td:nth-child(2)")).to_have_text(
        f"{line} (command)"
    )
    jobs = site.app.store.list_jobs(JobQuery(schedule="greeting"), limit=10).jobs
    done = [j for j in jobs if j.state is JobState.SUCCEEDED]
    assert done and all(j.task == "rota.cmd" for j in jobs)
    assert done[0].result["exit_code"] == 0 and done[0].result["stdout"] == "hello cron\n"

    page.goto(site.base + "/schedules/greeting/edit")  # the line as it was typed
    expect(page.locator("input[name=command]")).to_have_value(line)

    page.click("nav >> text=Send")
    page.fill("input[name=command]", f"{sys.executable} -c 'import sys; sys.exit(3)'")
    page.fill("textarea[name=kwargs]", '{"ok_codes": [0, 3]}')
    page.click("#send")
    expect(page).to_have_url(re.compile(re.escape(site.base) + r"/jobs/[0-9a-f]{32}$"))
    _reload_until(page, "h1 .state", "succeeded")
    job = site.app.store.get_job(page.url.rsplit("/", 1)[1])
    assert job is not None and job.task == "rota.cmd" and job.result["exit_code"] == 3

    page.click("nav >> text=Send")  # a command that would run a minute, stopped after 1 s
    page.fill("input[name=command]", f"{sys.executable} -c 'import time; time.sleep(60)'")
    page.fill("input[name=cmd_timeout]", "1s")
    page.fill("input[name=retries]", "0")
    page.click("#send")
    expect(page).to_have_url(re.compile(re.escape(site.base) + r"/jobs/[0-9a-f]{32}$"))
    _reload_until(page, "h1 .state", "failed")
    expect(page.locator("#error")).to_contain_text("was killed by SIGTERM after timeout 1 s")


def test_viewer_sees_neither_form(site: Site, page: Any) -> None:
    site.app.admin.add_schedule(
        "nightly", "shop.tick", {"type": "every", "interval": 3600}, args=[1]
    )
    _log_in(page, site.base, VIEWER, "/schedules")
    expect(page.locator(".role")).to_have_text("viewer")
    expect(page.locator("tr[data-schedule=nightly]")).to_have_count(1)
    expect(page.locator("nav >> text=Send")).to_have_count(0)
    expect(page.locator("#new-schedule")).to_have_count(0)
    expect(page.locator("a[href$='/edit']")).to_have_count(0)
    answer = page.goto(site.base + "/send")
    assert answer is not None and answer.status == 403
    answer = page.goto(site.base + "/schedules/new")
    assert answer is not None and answer.status == 403


def test_a_user_logs_in_sends_a_job_creates_a_schedule_and_finds_both_in_the_audit(
    site: Site, page: Any
) -> None:
    site.app.admin.add_user("mia", "operator", "mia's long passphrase")
    page.goto(site.base + "/send")
    page.fill("input[name=user]", "mia")
    page.fill("input[name=password]", "mia's long passphrase")
    page.click("form[action='/login'] button[type=submit]")
    expect(page).to_have_url(site.base + "/send")

    page.select_option("select[name=task]", "shop.total")
    page.fill("textarea[name=args]", "[[1, 2]]")
    page.click("#send")
    expect(page).to_have_url(re.compile(re.escape(site.base) + r"/jobs/[0-9a-f]{32}$"))
    job_id = page.url.rsplit("/", 1)[1]
    _reload_until(page, "h1 .state", "succeeded")

    page.goto(site.base + "/schedules/new")
    page.fill("input[name=name]", "pulse")
    page.select_option("select[name=task]", "shop.tick")
    page.select_option("select[name=kind]", "every")
    page.fill("input[name=interval]", "1")
    page.fill("textarea[name=args]", "[7]")
    page.click("#save")
    expect(page).to_have_url(site.base + "/schedules")
    _reload_until(page, "tr[data-schedule=pulse] td:nth-child(6)", "succeeded")

    page.goto(site.base + "/audit")
    for action, target in (("job.send", job_id), ("schedule.add", "pulse")):
        entry = page.locator(f"#audit tr[data-action='{action}']")
        expect(entry).to_have_count(1)
        expect(entry.locator("td").nth(1)).to_have_text("mia")
        expect(entry.locator("td").nth(2)).to_have_text("operator")
        expect(entry.locator("td").nth(6)).to_have_text(target)


def test_a_one_off_schedule_that_has_fired_reads_done_in_the_list(site: Site, page: Any) -> None:
    site.app.admin.add_schedule("once", "shop.tick", rota.at(datetime(2020, 1, 1)), args=[1])
    Scheduler(site.app).tick()
    assert site.app.store.get_schedule("once").next_fire is None  # type: ignore[union-attr]
    _log_in(page, site.base, VIEWER, "/schedules")
    cells = page.locator("tr[data-schedule=once] td")
    expect(cells.nth(3)).to_have_text("never")
    expect(cells.nth(6)).to_have_text("done")
    expect(page.locator("tr[data-schedule=once] .badge.running")).to_have_count(0)
