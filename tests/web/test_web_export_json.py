"""Results exported as one JSON array: from the API, streamed, on every store."""

from __future__ import annotations

import json

from starlette.testclient import TestClient

from rota import export
from web.support import Demo, expect_error, work


def test_export_json_array_of_a_task(client: TestClient, demo: Demo) -> None:
    demo.add.send_many([(i, 10) for i in range(3)])
    demo.fetch.send("https://example.com/")
    demo.add.send(99, 99)
    work(demo.store, ["default", "crawl"], fail=lambda job: b"99" in job.payload)

    answer = client.get("/api/export", params={"task": "math.add", "format": "json"})
    assert answer.status_code == 200
    assert answer.headers["content-type"] == "application/json"
    assert answer.headers["content-disposition"] == 'attachment; filename="results-math.add.json"'
    rows = answer.json()
    assert [(r["args"], r["result"]) for r in rows] == [
        ([i, 10], {"echo": [i, 10]}) for i in (2, 1, 0)
    ]  # newest first; the failed job is not a result
    assert all(list(r) == list(export.FIELDS) for r in rows)


def test_export_json_array_without_results_is_empty(client: TestClient) -> None:
    answer = client.get("/api/export", params={"queue": "nothing", "format": "json"})
    assert answer.status_code == 200
    assert answer.json() == []


def test_export_json_array_streams_in_chunks(client: TestClient, demo: Demo) -> None:
    demo.add.send_many([(i, i) for i in range(1200)])
    while work(demo.store, ["default"], limit=500):
        pass
    with client.stream("GET", "/api/export", params={"format": "json"}) as answer:
        chunks = list(answer.iter_raw())
    assert len(chunks) >= 3  # sent in pieces, not built as one body
    rows = json.loads(b"".join(chunks))
    assert len({r["id"] for r in rows}) == 1200


def test_export_unknown_format_names_json(client: TestClient) -> None:
    expect_error(
        client.get("/api/export", params={"format": "xml"}),
        422,
        "format: Input should be 'jsonl', 'json' or 'csv'",
    )
