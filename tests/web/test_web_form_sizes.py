"""Large form fields: the dashboard's forms read fields as large as the app's
payload cap, so rota's own payload check answers beside the field, and a
field too large to read is answered with the form and a precise message."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from starlette.testclient import TestClient

import rota
from rota.models import JobQuery
from rota.scheduling import every
from rota.stores import Store
from rota.web import create_app
from web.support import BASE, SECRET, Demo, csrf_of

MIB = 1024 * 1024


def _errors(page: str) -> dict[str, str]:
    """The page's messages by field ("" for the form's own)."""
    found = re.findall(r'class="field-error" id="error-([a-z_]+)"[^>]*>([^<]*)<', page)
    found += re.findall(r'id="error-form"[^>]*>()([^<]*)<', page)
    return {name: html.unescape(message) for name, message in found}


def _jobs(store: Store) -> list[Any]:
    return list(store.list_jobs(JobQuery(), limit=10).jobs)


def test_a_field_over_a_mebibyte_as_sent_within_the_cap_is_sent(
    client: TestClient, demo: Demo
) -> None:
    args = json.dumps(["é" * 200_000], ensure_ascii=False)  # 400 kB typed, 1.2 MB as sent
    data = {"csrf": csrf_of(client.get("/send").text), "task": "crawl.fetch", "args": args}
    answer = client.post("/send", data=data)
    assert answer.status_code == 303, _errors(answer.text)
    [job] = _jobs(demo.store)
    assert job.args == ["é" * 200_000]


def test_arguments_over_the_payload_cap_are_refused_beside_their_field(
    client: TestClient, demo: Demo
) -> None:
    args = "[" + "1," * 550_000 + "1]"  # 1.1 MB
    data = {"csrf": csrf_of(client.get("/send").text), "task": "math.add", "args": args}
    answer = client.post("/send", data=data)
    assert answer.status_code == 400
    size = len(b'{"args":' + args.encode() + b',"kwargs":{}}')
    assert _errors(answer.text) == {"args": f"payload is {size} bytes, over the cap of {MIB} bytes"}
    assert args in answer.text, "the form keeps what was typed"
    assert _jobs(demo.store) == []


def test_keyword_arguments_over_the_cap_are_refused_beside_theirs(
    client: TestClient, demo: Demo
) -> None:
    kwargs = json.dumps({"page": "x" * (MIB + 10)})
    data = {"csrf": csrf_of(client.get("/send").text), "task": "crawl.fetch", "kwargs": kwargs}
    answer = client.post("/send", data=data)
    assert answer.status_code == 400
    assert list(_errors(answer.text)) == ["kwargs"]
    assert "over the cap of" in _errors(answer.text)["kwargs"]


@pytest.fixture
def small(store: Store, url: str) -> Iterator[tuple[rota.App, TestClient]]:
    """A dashboard of an app whose payload cap is 1,000 bytes."""
    app = rota.App(url, payload_cap=1000)
    app.use_store(store)

    @app.task(name="math.add")
    def add(a: int, b: int) -> int:
        return a + b

    asgi = create_app(app, secret=SECRET)
    with TestClient(asgi, base_url=BASE, follow_redirects=False, client=("127.0.0.1", 5)) as c:
        yield app, c


TOO_LARGE = (
    "The form was not read, so nothing was saved: Field exceeded maximum size of 2KB"
    " (a job's arguments may take up to 1000 bytes, the app's payload cap)."
)


def test_a_field_too_large_to_read_answers_with_the_form_and_why(
    small: tuple[rota.App, TestClient],
) -> None:
    app, client = small
    csrf = csrf_of(client.get("/send").text)
    answer = client.post("/send", data={"csrf": csrf, "task": "math.add", "args": "[" * 3001})
    assert answer.status_code == 413
    assert _errors(answer.text) == {"": TOO_LARGE}
    assert 'id="send-form"' in answer.text
    assert _jobs(app.store) == []

    new = client.post("/schedules/new", data={"csrf": csrf, "name": "n", "args": "1" * 3001})
    assert new.status_code == 413 and _errors(new.text) == {"": TOO_LARGE}
    assert app.store.schedules() == []

    app.admin.add_schedule("tick", "math.add", every(60), args=[1, 2])
    before = app.store.schedules()
    edit = client.post("/schedules/tick/edit", data={"csrf": csrf, "args": "1" * 3001})
    assert edit.status_code == 413 and _errors(edit.text) == {"": TOO_LARGE}
    assert ">[1,2]</textarea>" in edit.text, "the form shows the stored schedule"
    assert app.store.schedules() == before


def test_a_field_too_large_to_read_still_needs_the_operator_role(
    small: tuple[rota.App, TestClient], url: str, store: Store
) -> None:
    app, _ = small
    asgi = create_app(app, token="op-token-000111", viewer_token="vw-token-222333")
    with TestClient(asgi, base_url=BASE, follow_redirects=False) as c:
        viewer = {"Authorization": "Bearer vw-token-222333"}
        answer = c.post("/send", data={"args": "[" * 3001}, headers=viewer)
        assert answer.status_code == 403
        stranger = c.post("/send", data={"args": "[" * 3001})
        assert stranger.status_code == 303 and stranger.headers["location"].startswith("/login")
    assert _jobs(app.store) == []
