"""Who may see and do what: tokens, roles, sessions, CSRF, loopback-only open mode."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable

import pytest
from starlette.testclient import TestClient

from rota.errors import InvalidArgument
from rota.web import check_bind, create_app
from web.support import (
    BASE,
    OPERATOR,
    SECRET,
    VIEWER,
    Demo,
    bearer,
    csrf_of,
    expect_error,
    login,
)

Clients = Callable[[], TestClient]


def test_api_without_credentials_is_401(secured: Clients) -> None:
    c = secured()
    answer = c.get("/api/stats")
    expect_error(answer, 401, "log in, or send 'Authorization: Bearer TOKEN'")
    assert answer.headers["www-authenticate"] == "Bearer"
    expect_error(c.post("/api/queues/default/pause"), 401)
    expect_error(c.get("/metrics"), 401)
    expect_error(c.get("/api/export"), 401)


def test_bad_tokens_are_401(secured: Clients) -> None:
    c = secured()
    expect_error(c.get("/api/stats", headers=bearer("wrong-token-000")), 401, "invalid token")
    expect_error(
        c.get("/api/stats", headers={"Authorization": f"Basic {OPERATOR}"}),
        401,
        "must be 'Bearer TOKEN'",
    )


def test_viewer_reads_but_cannot_act(secured: Clients, demo: Demo) -> None:
    handle = demo.add.send(1, 2)
    c = secured()
    assert c.get("/api/me", headers=bearer(VIEWER)).json() == {"role": "viewer"}
    assert c.get(f"/api/jobs/{handle.id}", headers=bearer(VIEWER)).status_code == 200
    assert c.get("/metrics", headers=bearer(VIEWER)).status_code == 200
    for method, path in [
        ("post", "/api/queues/default/pause"),
        ("post", f"/api/jobs/{handle.id}/cancel"),
        ("delete", f"/api/jobs/{handle.id}"),
        ("post", "/api/schedules/x/run"),
        ("delete", "/api/limits/site"),
    ]:
        expect_error(
            c.request(method, path, headers=bearer(VIEWER)),
            403,
            "needs the operator role; you are viewer",
        )
    assert demo.store.get_job(handle.id).state.value == "queued"  # type: ignore[union-attr]
    assert not any(q.paused for q in demo.store.queues())


def test_operator_acts_with_bearer_and_no_csrf(secured: Clients, demo: Demo) -> None:
    handle = demo.add.send(1, 2)
    c = secured()
    answer = c.post(f"/api/jobs/{handle.id}/cancel", headers=bearer(OPERATOR))
    assert answer.status_code == 200
    assert demo.store.get_job(handle.id).state.value == "cancelled"  # type: ignore[union-attr]


def test_pages_redirect_to_login_and_back(secured: Clients) -> None:
    c = secured()
    answer = c.get("/jobs?state=failed")
    assert answer.status_code == 303
    assert answer.headers["location"] == "/login?next=%2Fjobs%3Fstate%3Dfailed"
    form = c.get(answer.headers["location"])
    assert 'name="next" value="/jobs?state=failed"' in form.text
    done = c.post(
        "/login",
        data={"token": VIEWER, "csrf": csrf_of(form.text), "next": "/jobs?state=failed"},
    )
    assert (done.status_code, done.headers["location"]) == (303, "/jobs?state=failed")
    page = c.get("/jobs?state=failed")
    assert page.status_code == 200
    assert '<span class="role role-viewer">viewer</span>' in page.text


def test_login_rejects_wrong_token_and_missing_csrf(secured: Clients) -> None:
    c = secured()
    form = c.get("/login")
    wrong = c.post("/login", data={"token": "nope-nope-nope", "csrf": csrf_of(form.text)})
    assert wrong.status_code == 401
    assert "Wrong token." in wrong.text
    stale = c.post("/login", data={"token": OPERATOR, "csrf": "forged"})
    assert stale.status_code == 403
    assert c.get("/").status_code == 303  # still not logged in


def test_login_never_redirects_off_site(secured: Clients) -> None:
    c = secured()
    form = c.get("/login")
    done = c.post(
        "/login",
        data={"token": OPERATOR, "csrf": csrf_of(form.text), "next": "//evil.example/x"},
    )
    assert done.headers["location"] == "/"


def test_page_actions_need_the_session_csrf_token(secured: Clients, demo: Demo) -> None:
    handle = demo.add.send(1, 2)
    c = secured()
    csrf = login(c, OPERATOR)
    missing = c.post(f"/jobs/{handle.id}/cancel", data={})
    assert missing.status_code == 403
    assert "missing CSRF token" in missing.text
    forged = c.post(f"/jobs/{handle.id}/cancel", data={"csrf": "forged"})
    assert forged.status_code == 403
    assert demo.store.get_job(handle.id).state.value == "queued"  # type: ignore[union-attr]
    done = c.post(f"/jobs/{handle.id}/cancel", data={"csrf": csrf})
    assert done.status_code == 303
    assert demo.store.get_job(handle.id).state.value == "cancelled"  # type: ignore[union-attr]


def test_api_calls_through_the_session_need_the_csrf_header(secured: Clients, demo: Demo) -> None:
    c = secured()
    csrf = login(c, OPERATOR)
    assert c.get("/api/me").json() == {"role": "operator"}  # reads need no CSRF
    expect_error(c.post("/api/queues/default/pause"), 403, "missing CSRF token")
    expect_error(
        c.post("/api/queues/default/pause", headers={"X-CSRF-Token": "forged"}),
        403,
        "does not match",
    )
    assert not any(q.paused for q in demo.store.queues())
    ok = c.post("/api/queues/default/pause", headers={"X-CSRF-Token": csrf})
    assert ok.status_code == 200
    assert {q.name: q.paused for q in demo.store.queues()}["default"] is True


def test_viewer_session_cannot_act(secured: Clients, demo: Demo) -> None:
    c = secured()
    csrf = login(c, VIEWER)
    page = c.get("/queues")
    assert "Pause" not in page.text  # no action buttons for viewers
    answer = c.post("/queues/default/pause", data={"csrf": csrf})
    assert answer.status_code == 403
    assert "needs the operator role" in answer.text
    assert c.get("/queues/default/purge").status_code == 403


def test_logout_ends_the_session(secured: Clients) -> None:
    c = secured()
    csrf = login(c, OPERATOR)
    assert c.post("/logout", data={"csrf": csrf}).headers["location"] == "/login"
    assert c.get("/").status_code == 303


def test_changing_the_token_ends_old_sessions(secured: Clients, demo: Demo) -> None:
    c = secured()
    login(c, OPERATOR)
    cookie = c.cookies.get("rota_session")
    assert cookie
    rotated = create_app(demo.app, token="a-brand-new-token", secret=SECRET)
    with TestClient(
        rotated, base_url=BASE, follow_redirects=False, client=("127.0.0.1", 50000)
    ) as other:
        other.cookies.set("rota_session", cookie)
        assert other.get("/").status_code == 303
        expect_error(other.get("/api/me"), 401)


def test_no_secret_in_pages_cookies_or_api(secured: Clients, demo: Demo) -> None:
    demo.app.url = "redis://:hunter2-password@127.0.0.1:6390/0"  # shown, never used
    c = secured()
    login(c, OPERATOR)
    cookie = c.cookies.get("rota_session") or ""
    payload = base64.b64decode(cookie.split(".")[0] + "==")
    session = json.loads(payload)
    assert set(session) == {"role", "auth", "csrf"}
    bodies = [c.get(p).text for p in ("/", "/jobs", "/queues", "/schedules", "/workers", "/export")]
    bodies.append(c.get("/api/stats").text)
    bodies.append(payload.decode())
    for body in bodies:
        for secret in (OPERATOR, VIEWER, SECRET, "hunter2-password"):
            assert secret not in body
    assert "redis://:***@127.0.0.1:6390/0" in bodies[0]


def test_open_mode_everyone_is_operator_on_loopback(client: TestClient, demo: Demo) -> None:
    assert client.get("/api/me").json() == {"role": "operator"}
    assert client.get("/login").headers["location"] == "/"
    assert client.post("/api/queues/default/pause").status_code == 200  # like curl
    for host in ("127.0.0.1:8000", "[::1]:8000", "localhost", "app.localhost"):
        assert client.get("/api/me", headers={"Host": host}).status_code == 200


def test_open_mode_refuses_other_host_names(client: TestClient) -> None:
    for host in ("evil.example", "evil.example:8000", "10.0.0.5:8000"):
        expect_error(client.get("/api/me", headers={"Host": host}), 403, "loopback")
    page = client.get("/", headers={"Host": "rebound.example"})
    assert page.status_code == 403


def test_open_mode_refuses_peers_off_this_machine(demo: Demo) -> None:
    """A dashboard that lost its last login answers no one off this machine,
    whatever ``Host`` they claim (it could be served on 0.0.0.0)."""
    asgi = create_app(demo.app)
    with TestClient(asgi, base_url=BASE, client=("192.0.2.7", 50000)) as remote:
        for host in ("127.0.0.1", "localhost:8000"):
            expect_error(remote.get("/api/me", headers={"Host": host}), 403, "loopback")
        expect_error(remote.post("/api/queues/default/pause"), 403, "loopback")
    assert not any(q.paused for q in demo.store.queues())
    with TestClient(asgi, base_url=BASE, client=("::1", 50000)) as local:
        assert local.get("/api/me").json() == {"role": "operator"}


def test_open_mode_refuses_cross_site_actions(client: TestClient, demo: Demo) -> None:
    expect_error(
        client.post("/api/queues/default/pause", headers={"Origin": "https://evil.example"}),
        403,
        "cross-origin",
    )
    expect_error(
        client.post("/api/queues/default/pause", headers={"Sec-Fetch-Site": "cross-site"}),
        403,
        "cross-site",
    )
    assert not any(q.paused for q in demo.store.queues())
    same = client.post("/api/queues/default/pause", headers={"Origin": "http://localhost"})
    assert same.status_code == 200


def test_open_mode_browser_sessions_still_need_csrf(client: TestClient, demo: Demo) -> None:
    csrf = csrf_of(client.get("/queues").text)  # the page starts a session
    assert client.post("/queues/default/pause", data={}).status_code == 403
    assert client.post("/queues/default/pause", data={"csrf": csrf}).status_code == 303


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"viewer_token": VIEWER}, "viewer_token needs an operator token"),
        ({"token": "short"}, "token must be at least 8 characters"),
        ({"token": OPERATOR, "viewer_token": OPERATOR}, "must differ"),
    ],
)
def test_bad_token_configuration(demo: Demo, kwargs: dict[str, str], message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        create_app(demo.app, **kwargs)


def test_check_bind() -> None:
    for host in ("127.0.0.1", "localhost", "::1", "127.0.0.2"):
        check_bind(host, None)
    check_bind("0.0.0.0", OPERATOR)
    check_bind("0.0.0.0", None, users=True)  # user accounts are a login too
    for host in ("0.0.0.0", "::", "192.168.1.10", "example.com"):
        with pytest.raises(InvalidArgument, match="without a login"):
            check_bind(host, None)


def test_security_headers(client: TestClient) -> None:
    answer = client.get("/")
    csp = answer.headers["content-security-policy"]
    assert "script-src 'self'" in csp
    assert "frame-ancestors 'none'" in csp
    assert answer.headers["x-frame-options"] == "DENY"
    assert answer.headers["x-content-type-options"] == "nosniff"
