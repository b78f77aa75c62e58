"""Helpers of the dashboard tests: the demo app, clients, login, a store-driven worker."""

from __future__ import annotations

import re
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from starlette.testclient import TestClient

import rota
from rota import _json
from rota.models import ClaimedJob, Outcome
from rota.stores import Store
from rota.web import create_app

OPERATOR = "operator-token-0123"
VIEWER = "viewer-token-4567"
SECRET = "test-session-secret"
BASE = "http://localhost"


@dataclass
class Demo:
    """A rota app with a few tasks, bound to the test's store."""

    app: rota.App
    store: Store
    fetch: rota.Task[[str], Any]
    add: rota.Task[[int, int], int]
    guarded: rota.Task[[str], Any]


def client_for(
    demo: Demo, *, token: str | None = None, viewer_token: str | None = None
) -> TestClient:
    """A test client of a fresh dashboard on ``demo``'s app (loopback host)."""
    asgi = create_app(demo.app, token=token, viewer_token=viewer_token, secret=SECRET)
    return TestClient(asgi, base_url=BASE, follow_redirects=False, client=("127.0.0.1", 50000))


def bearer(token: str) -> dict[str, str]:
    """The Authorization header for ``token``."""
    return {"Authorization": f"Bearer {token}"}


def csrf_of(html: str) -> str:
    """The CSRF token embedded in a page's forms."""
    match = re.search(r'name="csrf" value="([^"]+)"', html)
    assert match, "page has no CSRF field"
    return match.group(1)


def login(c: TestClient, token: str) -> str:
    """Log ``c`` in through the form; return the session's CSRF token."""
    page = c.get("/login")
    assert page.status_code == 200
    answer = c.post("/login", data={"token": token, "csrf": csrf_of(page.text), "next": "/"})
    assert answer.status_code == 303, answer.text
    return csrf_of(c.get("/").text)


def work(
    store: Store,
    queues: Sequence[str] = ("default", "crawl", "guarded"),
    *,
    fail: Callable[[ClaimedJob], bool] = lambda job: False,
    limit: int = 100,
) -> list[ClaimedJob]:
    """Claim what is runnable and finish it through the store protocol, as a worker
    would: succeed with ``{"echo": args}``, or fail where ``fail(job)`` says so."""
    claimed = store.claim("test-worker", list(queues), limit)
    outcomes = []
    for job in claimed:
        payload = _json.loads(job.payload)
        if fail(job):
            outcomes.append(
                Outcome(
                    job.id,
                    job.token,
                    ok=False,
                    error="ValueError: boom",
                    traceback='Traceback (most recent call last):\n  File "t.py"\nValueError: boom',
                )
            )
        else:
            outcomes.append(
                Outcome(job.id, job.token, ok=True, result=_json.dumps({"echo": payload["args"]}))
            )
    assert all(store.finish(outcomes))
    return claimed


def fail_all(job: ClaimedJob) -> bool:
    """A ``fail`` predicate for :func:`work` that fails every job."""
    return True


def expect_error(answer: Any, status: int, *fragments: str) -> dict[str, Any]:
    """Assert a JSON error answer with ``status`` whose detail has every fragment."""
    assert answer.status_code == status, answer.text
    body: dict[str, Any] = answer.json()
    assert set(body) == {"error", "detail"}, body
    for fragment in fragments:
        assert fragment in body["detail"], body
    return body


def free_port() -> int:
    """A TCP port that was free on the loopback interface a moment ago."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
