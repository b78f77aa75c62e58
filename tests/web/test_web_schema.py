"""Property-based run of the OpenAPI document: whatever comes in, no 5xx goes out."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error, response_schema_conformance
from schemathesis.core.result import Ok

from rota.models import Schedule
from rota.scheduling import every
from rota.web import create_app
from web.support import BASE, Demo, fail_all, work


@pytest.fixture
def api_schema(demo: Demo) -> schemathesis.BaseSchema:
    """The dashboard's OpenAPI document, over a store with a little of everything."""
    demo.fetch.send_many([("https://example.com/a",), ("https://example.com/b",)])
    demo.add.send(1, 2)
    demo.guarded.send("x")
    work(demo.store, ["default"], fail=fail_all)
    demo.store.upsert_schedule(
        Schedule(
            name="nightly",
            task="math.add",
            trigger=every(3600).to_json(),
            payload=b'{"args":[1,2],"kwargs":{}}',
            next_fire=demo.store.now() + 3600,
        )
    )
    return schemathesis.openapi.from_asgi("/api/openapi.json", _from_loopback(create_app(demo.app)))


def _from_loopback(asgi: Any) -> Any:
    """``asgi`` with every request's peer a loopback address, as a dashboard
    without a login needs (the generated requests come from ``testclient``)."""

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await asgi({**scope, "client": ("127.0.0.1", 50000)}, receive, send)

    return app


def test_api_answers_without_server_errors(api_schema: schemathesis.BaseSchema) -> None:
    """Every operation, a few generated requests each (valid and invalid): never a
    5xx, and every documented answer matches its schema. Driven by hand over the
    operations, which keeps the run bounded and independent of the pytest plugin."""
    operations = []
    for result in api_schema.get_all_operations():
        assert isinstance(result, Ok), result
        operations.append(result.ok())
    assert len(operations) >= 24
    calls: list[int] = []

    for operation, mode in itertools.product(operations, GenerationMode):

        @given(case=operation.as_strategy(generation_mode=mode))
        @settings(
            max_examples=6,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        def check(case: Any) -> None:
            response = case.call_and_validate(
                base_url=BASE, checks=[not_a_server_error, response_schema_conformance]
            )
            calls.append(response.status_code)

        check()
    assert len(calls) >= 2 * len(operations)
    assert all(status < 500 for status in calls)
    assert {200, 404, 422} <= set(calls)  # both valid and invalid requests were made
