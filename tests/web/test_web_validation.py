"""Bad input to the REST API: a 400 or 422 with the precise message, nothing
changed in the store; and a fuzzer over every write endpoint's JSON body and
names that never gets a 500 (on every store)."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from rota.stores import Store
from web.support import Demo


def snapshot(store: Store) -> tuple[Any, ...]:
    """What a refused request could have written."""
    return (
        [(q.name, q.paused, dict(q.counts)) for q in store.queues()],
        [(s.name, s.enabled) for s in store.schedules()],
        [(i.key, i.override) for i in store.limits()],
    )


def refused(answer: Any, status: int, detail: str) -> None:
    assert answer.status_code == status, answer.text
    body = answer.json()
    assert detail in body["detail"], body


DEEP = "[" * 30_000 + "]" * 30_000


@pytest.mark.parametrize(
    ("body", "status", "detail"),
    [
        ('{"concurrency": true}', 422, "concurrency: Input should be a valid integer"),
        ('{"concurrency": 1.5}', 422, "concurrency: Input should be a valid integer"),
        ('{"concurrency": 2.0}', 422, "concurrency: Input should be a valid integer"),
        ('{"concurrency": "3"}', 422, "concurrency: Input should be a valid integer"),
        ('{"concurrency": -1}', 422, "greater than or equal to 0"),
        (f'{{"concurrency": {2**70}}}', 422, "less than or equal to 1000000"),
        ('{"concurrency": NaN}', 422, "concurrency: Input should be a valid integer"),
        ('{"concurrency": Infinity}', 422, "concurrency"),
        ("{}", 422, "concurrency: Field required"),
        ('{"concurrency": ' + DEEP + "}", 400, ""),
        ("[1, 2", 422, "the body is not JSON: Expecting ',' delimiter at character 5"),
    ],
)
def test_limit_bodies_are_strict(
    client: TestClient, demo: Demo, body: str, status: int, detail: str
) -> None:
    before = snapshot(demo.store)
    answer = client.put(
        "/api/limits/site", content=body, headers={"Content-Type": "application/json"}
    )
    refused(answer, status, detail)
    assert snapshot(demo.store) == before


@pytest.mark.parametrize(
    ("method", "path", "body", "detail"),
    [
        ("POST", "/api/queues/%20crawl/pause", None, "surrounding spaces"),
        ("POST", "/api/queues/crawl%0D/pause", None, "control characters"),
        ("POST", "/api/queues/crawl%09x/resume", None, "control characters"),
        ("PUT", "/api/limits/%20site", {"concurrency": 1}, "limit key ' site' must not have"),
        ("PUT", "/api/limits/si%00te", {"concurrency": 1}, "control characters"),
        ("DELETE", "/api/limits/si%0Dte", None, "control characters"),
        ("POST", "/api/jobs/retry-failed", {"queue": "a\nb"}, "queue 'a\\nb' must not have"),
        ("POST", "/api/jobs/retry-failed", {"task": " t"}, "surrounding spaces"),
        ("POST", "/api/jobs/retry-failed", {"queue": ""}, "needs a queue or a task"),
    ],
)
def test_bad_names_get_400_and_change_nothing(
    client: TestClient, demo: Demo, method: str, path: str, body: Any, detail: str
) -> None:
    before = snapshot(demo.store)
    refused(client.request(method, path, json=body), 400, detail)
    assert snapshot(demo.store) == before


def test_retry_failed_takes_strings_only(client: TestClient, demo: Demo) -> None:
    before = snapshot(demo.store)
    for body in ({"queue": 5}, {"queue": ["crawl"]}, {"task": True}):
        refused(client.post("/api/jobs/retry-failed", json=body), 422, "valid string")
    assert snapshot(demo.store) == before


def test_a_valid_limit_still_applies(client: TestClient, demo: Demo) -> None:
    assert client.put("/api/limits/site", json={"concurrency": 1_000_000}).status_code == 200
    assert [(i.key, i.override) for i in demo.store.limits()] == [("site", 1_000_000)]


# -- fuzz ------------------------------------------------------------------------------

ENDPOINTS = [
    ("POST", "/api/queues/{name}/pause"),
    ("POST", "/api/queues/{name}/resume"),
    ("POST", "/api/queues/{name}/purge"),
    ("POST", "/api/jobs/retry-failed"),
    ("POST", "/api/jobs/{name}/retry"),
    ("POST", "/api/jobs/{name}/cancel"),
    ("POST", "/api/schedules/{name}/pause"),
    ("POST", "/api/schedules/{name}/resume"),
    ("POST", "/api/schedules/{name}/run"),
    ("PUT", "/api/limits/{name}"),
    ("POST", "/api/limits/{name}/reset"),
]

scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()  # NaN and infinities included: Python's json writes them as tokens
    | st.text(max_size=30)
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(["concurrency", "queue", "task", "args", "x", ""])
            | st.text(max_size=8),
            inner,
            max_size=4,
        )
    ),
    max_leaves=12,
)
bodies = (
    values.map(json.dumps)
    | st.sampled_from([DEEP, "{" * 5000, "", "nul", '{"concurrency": 1e999}', "\x00"])
    | st.text(max_size=40)
)
names = st.sampled_from(["crawl", "site", "default"]) | st.text(min_size=1, max_size=250)


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(endpoint=st.sampled_from(ENDPOINTS), name=names, body=bodies)
def test_fuzzed_write_requests_never_get_a_500(
    client: TestClient, endpoint: tuple[str, str], name: str, body: str
) -> None:
    method, template = endpoint
    path = template.format(name=quote(name, safe=""))
    answer = client.request(
        method,
        path,
        content=body.encode("utf-8", "surrogatepass"),
        headers={"Content-Type": "application/json"},
    )
    assert answer.status_code < 500, (method, path, body[:200], answer.text)
    if answer.status_code >= 400:
        assert answer.json()["detail"]
