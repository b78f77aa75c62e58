"""Users on the dashboard and API: login per user, per-user API tokens, roles, audit."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

import rota
from backends import drop_store, store_url
from rota.admin import NO_ROLE, NOT_LOGGED_IN
from rota.models import AuditEntry
from rota.web import create_app
from web.support import BASE, OPERATOR, SECRET, Demo, bearer, csrf_of, expect_error, login

PASSWORD = "a long enough password"
WRITES = {"POST", "PUT", "PATCH", "DELETE"}


@pytest.fixture
def team(demo: Demo) -> Iterator[TestClient]:
    """A dashboard without shared tokens whose store has a viewer, an operator
    and an admin; the client is not logged in."""
    for name, role in (("vic", "viewer"), ("ola", "operator"), ("ada", "admin")):
        demo.app.admin.add_user(name, role, PASSWORD)
    asgi = create_app(demo.app, secret=SECRET)
    with TestClient(asgi, base_url=BASE, follow_redirects=False, client=("127.0.0.1", 50000)) as c:
        yield c


def user_login(c: TestClient, name: str, password: str = PASSWORD) -> str:
    """Log in through the form as a user; the session's CSRF token."""
    page = c.get("/login")
    assert page.status_code == 200 and 'name="user"' in page.text
    answer = c.post(
        "/login",
        data={"user": name, "password": password, "csrf": csrf_of(page.text), "next": "/"},
    )
    assert answer.status_code == 303, answer.text
    return csrf_of(c.get("/").text)


def audit(demo: Demo, action: str) -> list[AuditEntry]:
    return demo.store.audit(limit=100, action=action)[0]


def write_paths(c: TestClient) -> list[tuple[str, str]]:
    """Every state-changing API endpoint (from the OpenAPI schema), with its
    path parameters filled in."""
    schema = c.get("/api/openapi.json").json()
    found = []
    for path, operations in schema["paths"].items():
        filled = re.sub(r"\{[^}]+\}", "x", path)
        found += [(m.upper(), filled) for m in sorted(operations) if m.upper() in WRITES]
    return found


def test_with_users_the_dashboard_asks_for_a_user_name_and_password(
    team: TestClient, demo: Demo
) -> None:
    expect_error(team.get("/api/me"), 401, "log in")
    assert team.get("/").headers["location"].startswith("/login")
    page = team.get("/login")
    assert 'name="user"' in page.text and 'name="password"' in page.text
    assert 'name="token"' not in page.text  # no shared token configured
    user_login(team, "ola")
    assert team.get("/api/me").json()["role"] == "operator"
    queues = team.get("/queues")
    assert queues.status_code == 200
    assert '<span class="user" title="logged in as">ola</span>' in queues.text


def test_a_wrong_password_is_refused_and_audited(team: TestClient, demo: Demo) -> None:
    page = team.get("/login")
    answer = team.post(
        "/login",
        data={"user": "ola", "password": "not it at all", "csrf": csrf_of(page.text)},
    )
    assert answer.status_code == 401 and "Wrong user name or password" in answer.text
    expect_error(team.get("/api/me"), 401)
    [entry] = audit(demo, "user.login_failed")
    assert (entry.target, entry.origin, entry.address) == ("ola", "web", "127.0.0.1")
    # no one acted and no role was granted: not ola, not an "anonymous" viewer
    assert (entry.actor, entry.role, entry.details) == (NOT_LOGGED_IN, NO_ROLE, {})


def test_failed_logins_are_limited_per_address(team: TestClient, demo: Demo) -> None:
    csrf = csrf_of(team.get("/login").text)
    form = {"user": "ola", "password": "wrong password", "csrf": csrf}
    limit = 10
    codes = [team.post("/login", data=form).status_code for _ in range(limit)]
    assert codes == [401] * limit
    refused = team.post("/login", data={**form, "password": PASSWORD})
    assert refused.status_code == 429 and "Too many failed logins" in refused.text
    expect_error(team.get("/api/me"), 401)
    assert len(audit(demo, "user.login_failed")) == limit  # the refused try checked nothing


def test_a_viewer_gets_403_from_every_write_endpoint(team: TestClient, demo: Demo) -> None:
    secret = demo.app.admin.create_token("vic", "ci")
    writes = write_paths(team)
    assert len(writes) >= 15, writes
    for method, path in writes:
        answer = team.request(method, path, headers=bearer(secret), json={})
        expect_error(answer, 403, "needs the operator role", "you are viewer")
    csrf = user_login(team, "vic")
    for method, path in writes:
        answer = team.request(method, path, headers={"X-CSRF-Token": csrf}, json={})
        expect_error(answer, 403, "needs the operator role")
    assert audit(demo, "queue.pause") == [] and demo.store.queues() == []


def test_a_viewer_sees_no_action_forms(team: TestClient, demo: Demo) -> None:
    demo.fetch.send("https://example.com/")
    user_login(team, "vic")
    for page in ("/queues", "/schedules", "/jobs"):
        html = team.get(page).text
        forms = re.findall(r'<form method="post" action="([^"]+)"', html)
        assert forms == ["/logout"], (page, forms)


def test_an_operator_acts_and_the_audit_entry_names_them(team: TestClient, demo: Demo) -> None:
    demo.fetch.send("https://example.com/")
    csrf = user_login(team, "ola")
    html = team.get("/queues").text
    assert 'action="/queues/crawl/pause"' in html
    answer = team.post("/queues/crawl/pause", data={"csrf": csrf})
    assert answer.status_code == 303
    assert {q.name: q.mode for q in demo.store.queues()}["crawl"] == "paused"
    [entry] = audit(demo, "queue.pause")
    assert (entry.actor, entry.role, entry.origin, entry.target) == (
        "ola",
        "operator",
        "web",
        "crawl",
    )
    secret = demo.app.admin.create_token("ola", "script")
    resumed = team.post("/api/queues/crawl/resume", headers=bearer(secret))
    assert resumed.status_code == 200, resumed.text
    [entry] = audit(demo, "queue.resume")
    assert (entry.actor, entry.origin) == ("ola", "api")


def test_a_per_user_token_works_until_revoked(team: TestClient, demo: Demo) -> None:
    secret = demo.app.admin.create_token("ola", "ci")
    me = team.get("/api/me", headers=bearer(secret))
    assert me.status_code == 200 and me.json()["role"] == "operator"
    demo.app.admin.revoke_token("ola", "ci")
    expect_error(team.get("/api/me", headers=bearer(secret)), 401, "invalid token")
    expect_error(team.post("/api/queues/crawl/pause", headers=bearer(secret)), 401)


def test_a_role_change_applies_at_once_and_removal_ends_the_session(
    team: TestClient, demo: Demo
) -> None:
    csrf = user_login(team, "ola")
    demo.app.admin.set_role("ola", "viewer")
    expect_error(
        team.post("/api/queues/crawl/pause", headers={"X-CSRF-Token": csrf}), 403, "viewer"
    )
    demo.app.admin.set_password("ola", "a brand new password")
    expect_error(team.get("/api/me"), 401)
    user_login(team, "ola", "a brand new password")
    demo.app.admin.remove_user("ola")
    expect_error(team.get("/api/me"), 401)


def test_a_copy_of_the_cookie_is_worth_nothing_once_its_session_logged_out(
    team: TestClient, demo: Demo
) -> None:
    csrf = user_login(team, "ola")
    copied = team.cookies.get("rota_session")
    assert copied
    [label] = demo.store.get_user("ola").tokens  # type: ignore[union-attr]
    assert re.fullmatch(r"dashboard-session-\d{8}T\d{6}Z-[0-9a-f]{8}", label), label
    with TestClient(team.app, base_url=BASE, client=("127.0.0.1", 50001)) as other:
        other.cookies.set("rota_session", copied)
        assert other.get("/api/me").json()["role"] == "operator"  # a copy works while it lasts
        assert team.post("/logout", data={"csrf": csrf}).status_code == 303
        expect_error(other.get("/api/me"), 401, "log in")
        expect_error(other.post("/api/queues/crawl/pause", headers={"X-CSRF-Token": csrf}), 401)
    assert demo.store.get_user("ola").tokens == ()  # type: ignore[union-attr]
    [logged_in] = audit(demo, "user.login")
    [logged_out] = audit(demo, "user.logout")
    for entry in (logged_in, logged_out):
        who = (entry.actor, entry.role, entry.origin, entry.address, entry.target)
        assert who == ("ola", "operator", "web", "127.0.0.1", "ola"), entry

    # an admin ends a session by revoking its token; its secret is no bearer token
    user_login(team, "ola")
    [label] = demo.store.get_user("ola").tokens  # type: ignore[union-attr]
    secret = team.cookies.get("rota_session")
    expect_error(team.get("/api/me", headers=bearer(str(secret))), 401, "invalid token")
    demo.app.admin.revoke_token("ola", label)
    expect_error(team.get("/api/me"), 401, "log in")


def test_a_login_ends_the_users_sessions_past_their_age(team: TestClient, demo: Demo) -> None:
    gone = "dashboard-session-20200101T000000Z-0123abcd"
    demo.store.put_token("ola", gone, "0" * 64)  # a session never logged out, long expired
    demo.app.admin.create_token("ola", "ci")  # an API token stays whatever its age
    user_login(team, "ola")
    labels = demo.store.get_user("ola").tokens  # type: ignore[union-attr]
    assert gone not in labels and "ci" in labels and len(labels) == 2


def test_a_login_a_read_only_store_cannot_record_says_so_and_starts_no_session(
    tmp_path: Path,
) -> None:
    url = store_url("postgres", tmp_path)
    writer = rota.App(url)
    # the dashboard on a hot standby given as its store: every write is refused
    standby = rota.App(f"{url}&options=-c%20default_transaction_read_only%3Don")
    try:
        writer.admin.add_user("ola", "operator", PASSWORD)
        asgi = create_app(standby, secret=SECRET)
        with TestClient(asgi, base_url=BASE, follow_redirects=False) as c:
            page = c.get("/login")
            answer = c.post(
                "/login",
                data={"user": "ola", "password": PASSWORD, "csrf": csrf_of(page.text)},
            )
            assert answer.status_code == 503, answer.text
            assert "Your session could not be started" in answer.text
            assert "read-only" in answer.text
            expect_error(c.get("/api/me"), 401, "log in")
        assert writer.store.get_user("ola").tokens == ()  # type: ignore[union-attr]
    finally:
        standby.close()
        writer.close()
        drop_store("postgres", url)


def test_shared_tokens_keep_working_beside_users(demo: Demo) -> None:
    demo.app.admin.add_user("ola", "operator", PASSWORD)
    asgi = create_app(demo.app, token=OPERATOR, secret=SECRET)
    with TestClient(asgi, base_url=BASE, follow_redirects=False, client=("127.0.0.1", 50000)) as c:
        page = c.get("/login").text
        assert 'name="user"' in page and 'name="token"' in page
        assert c.get("/api/me", headers=bearer(OPERATOR)).json()["role"] == "operator"
        login(c, OPERATOR)
        assert c.get("/api/me").json()["role"] == "operator"
    with TestClient(asgi, base_url=BASE, follow_redirects=False, client=("127.0.0.1", 50000)) as c:
        user_login(c, "ola")
        assert c.get("/api/me").json()["role"] == "operator"
