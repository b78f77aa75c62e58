"""The dashboard and the API over jobs whose stored payload is corrupt, and the
count of errors a worker survived."""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient

from backends import overwrite_job
from rota.cli._support import fmt_time
from rota.models import WorkerInfo
from rota.web._app import _iso, _when
from web.support import Demo


def test_pages_and_api_show_a_job_with_a_corrupt_payload(
    client: TestClient, demo: Demo, backend: str, url: str
) -> None:
    bad = demo.fetch.send("https://example.com/").id
    good = demo.fetch.send("https://example.org/").id
    overwrite_job(backend, url, bad, b'{"args": ["\xff')

    listing = client.get("/jobs")
    assert listing.status_code == 200
    assert bad in listing.text and good in listing.text
    page = client.get(f"/jobs/{bad}")
    assert page.status_code == 200 and "CorruptJob" in page.text

    api = client.get("/api/jobs")
    assert api.status_code == 200
    assert {job["id"] for job in api.json()["jobs"]} >= {bad, good}
    one = client.get(f"/api/jobs/{bad}")
    assert one.status_code == 200
    body = one.json()
    assert (body["args"], body["kwargs"]) == ([], {})
    assert body["error"].startswith(f"CorruptJob: job {bad} has a corrupt payload: not UTF-8")


def test_workers_page_shows_the_errors_a_worker_survived(client: TestClient, demo: Demo) -> None:
    for worker_id, errors in (("node-1:10", 4), ("node-2:20", 0)):
        demo.store.heartbeat(
            WorkerInfo(
                id=worker_id,
                host=worker_id.split(":")[0],
                pid=10,
                queues=("crawl",),
                concurrency=2,
                mode="threads",
                running=0,
                started_at=demo.store.now(),
                errors=errors,
            )
        )
    html = client.get("/workers").text
    row = html.split('data-worker="node-1:10"', 1)[1].split("</tr>", 1)[0]
    assert '<span class="badge state-failed">4</span>' in row
    clean = html.split('data-worker="node-2:20"', 1)[1].split("</tr>", 1)[0]
    assert '<td class="num">0</td>' in clean
    assert "<th" in html and "Errors</th>" in html


@pytest.mark.parametrize("time", [-9e10, 253_402_300_799.0])
def test_a_schedule_at_a_time_no_date_can_show_is_refused(
    client: TestClient, demo: Demo, time: float
) -> None:
    before = demo.store.schedules()
    body = {"name": "neg2", "task": "math.add", "trigger": {"type": "at", "time": time}}
    answer = client.post("/api/schedules", json=body)
    assert answer.status_code == 400, answer.text
    assert "the earliest time rota keeps" in answer.text or "the latest time" in answer.text
    assert answer.json()["error"] == "invalid_schedule"
    assert demo.store.schedules() == before
    assert client.get("/schedules").status_code == 200


def test_time_filters_show_a_stored_time_no_date_can_show() -> None:
    assert _when(-9e10) == "epoch -90000000000.0"
    assert _when(1e20) == "epoch 1e+20"
    assert _iso(-9e10) == ""
    assert _when(0.0) == "1970-01-01 00:00:00 UTC"
    assert fmt_time(-9e10) == "epoch -90000000000.0"


def test_an_interval_over_100_years_is_an_invalid_schedule(client: TestClient, demo: Demo) -> None:
    before = demo.store.schedules()
    body = {"name": "far", "task": "math.add", "trigger": {"type": "every", "interval": 1e308}}
    answer = client.post("/api/schedules", json=body)
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"] == "invalid_schedule"
    assert "every() interval of 1e+308 s is more than 100 years" in answer.json()["detail"]
    assert demo.store.schedules() == before


def test_a_trigger_field_its_type_does_not_have_is_refused(client: TestClient, demo: Demo) -> None:
    """``tz`` belongs to cron: on an ``every`` trigger it was dropped without a word."""
    before = demo.store.schedules()
    trigger = {"type": "every", "interval": 60, "tz": "Europe/Paris"}
    answer = client.post(
        "/api/schedules", json={"name": "e", "task": "math.add", "trigger": trigger}
    )
    assert answer.status_code == 400, answer.text
    assert answer.json() == {
        "error": "invalid_schedule",
        "detail": "every trigger has no field 'tz'; its fields are interval, start, end",
    }
    assert demo.store.schedules() == before
