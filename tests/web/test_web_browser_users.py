"""Users in real headless Chromium: log in by name and password, act, find the
action under one's name on the audit page; a viewer sees no action buttons.
Chromium as in test_web_browser.py (skips locally without it, fails in CI)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import uvicorn

import rota
from helpers import wait_for
from rota.web import create_app
from web.support import SECRET, free_port
from web.test_web_browser import TIMEOUT_MS, browser, expect, page

__all__ = ["browser", "page"]  # fixtures shared with test_web_browser.py

pytestmark = pytest.mark.browser
PASSWORD = "a long enough password"


@dataclass
class Site:
    app: rota.App
    base: str


@pytest.fixture
def site(tmp_path: Path) -> Iterator[Site]:
    """uvicorn serving the dashboard of a store with an operator and a viewer
    (no shared token) and one queued job on queue ``orders``."""
    app = rota.App(f"sqlite:///{tmp_path / 'rota.db'}")

    @app.task(queue="orders", name="shop.order")
    def order(n: int) -> int:
        return n * 2

    app.admin.add_user("ola", "operator", PASSWORD)
    app.admin.add_user("vic", "viewer", PASSWORD)
    order.send(1)
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(create_app(app, secret=SECRET), port=port, log_level="warning")
    )
    thread = threading.Thread(target=server.run, name="test-uvicorn", daemon=True)
    thread.start()
    try:
        wait_for(lambda: server.started, timeout=20, what="uvicorn to start")
        yield Site(app, f"http://127.0.0.1:{port}")
    finally:
        server.should_exit = True
        thread.join(timeout=20)
        app.close()
    assert not thread.is_alive()


def _log_in(page: Any, base: str, user: str, password: str = PASSWORD) -> None:
    page.goto(base + "/queues")
    expect(page).to_have_url(f"{base}/login?next=%2Fqueues")
    page.fill("input[name=user]", user)
    page.fill("input[name=password]", password)
    page.click("form[action='/login'] button[type=submit]")
    expect(page).to_have_url(base + "/queues")


def test_a_user_acts_and_finds_the_action_on_the_audit_page(site: Site, page: Any) -> None:
    page.goto(site.base + "/login")
    page.fill("input[name=user]", "ola")
    page.fill("input[name=password]", "not the password")
    page.click("form[action='/login'] button[type=submit]")
    expect(page.locator(".flash-error")).to_have_text("Wrong user name or password.")

    _log_in(page, site.base, "ola")
    expect(page.locator(".role")).to_have_text("operator")
    row = page.locator("#queues tr[data-queue=orders]")
    row.locator("button:text('Pause')").click()
    expect(row.locator(".mode .badge")).to_have_text("paused", timeout=TIMEOUT_MS)
    assert {q.name: q.mode for q in site.app.store.queues()}["orders"] == "paused"

    page.goto(site.base + "/audit")
    entry = page.locator("#audit tr[data-action='queue.pause']")
    expect(entry).to_have_count(1)
    expect(entry.locator("td").nth(1)).to_have_text("ola")
    expect(entry.locator("td").nth(3)).to_have_text("web")
    expect(entry.locator("td").nth(6)).to_have_text("orders")
    failed = page.locator("#audit tr[data-action='user.login_failed']")
    expect(failed.locator("td").nth(6)).to_have_text("ola")  # the name tried
    expect(failed.locator("td").nth(1)).to_have_text("(not logged in)")  # not ola acting
    expect(failed.locator("td").nth(2)).to_have_text("-")  # no role granted


def test_a_viewer_sees_no_action_buttons(site: Site, page: Any) -> None:
    _log_in(page, site.base, "vic")
    expect(page.locator(".role")).to_have_text("viewer")
    expect(page.locator("#queues tr[data-queue=orders]")).to_have_count(1)
    expect(page.locator("#queues button")).to_have_count(0)
    answer = page.request.post(site.base + "/api/queues/orders/pause")
    assert answer.status == 403
    assert answer.json()["error"] == "forbidden"
    assert "needs the operator role" in answer.json()["detail"]
    assert [q.mode for q in site.app.store.queues()] == ["running"]
