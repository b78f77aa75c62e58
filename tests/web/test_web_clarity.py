"""What the dashboard and API say about ids, attempts and failures: short ids
resolve, lost attempts read as lost, a job that succeeded on a retry carries
no error, and failed attempts are told apart from failed jobs."""

from __future__ import annotations

import re

import orjson
from starlette.testclient import TestClient

from helpers import wait_for
from rota.models import JobState, NewJob, Outcome
from web.support import Demo, csrf_of, expect_error, work


def _put(demo: Demo, job_id: str, **fields: object) -> str:
    job = NewJob(
        id=job_id,
        task="math.add",
        queue="default",
        payload=orjson.dumps({"args": [1, 2], "kwargs": {}}),
        **fields,  # type: ignore[arg-type]
    )
    return demo.store.enqueue([job])[0].id


def test_api_and_pages_take_unique_prefixes(client: TestClient, demo: Demo) -> None:
    job_id = demo.add.send(1, 2).id
    short = job_id[:12]
    assert client.get(f"/api/jobs/{short}").json()["id"] == job_id
    cancelled = client.post(f"/api/jobs/{job_id[:8]}/cancel").json()
    assert cancelled == {"ok": True, "message": f"job {job_id} cancelled"}
    retried = client.post(f"/api/jobs/{job_id[:6]}/retry").json()
    assert retried == {"ok": True, "message": f"job {job_id} queued again"}

    page = client.get(f"/jobs/{short}")  # starts a session: forms carry its CSRF token
    assert page.status_code == 200
    assert f'<span class="mono">{job_id}</span>' in page.text
    answer = client.post(f"/jobs/{short}/cancel", data={"csrf": csrf_of(page.text)})
    assert answer.status_code == 303
    assert f"Job {job_id} cancelled." in client.get(answer.headers["location"]).text
    answer = client.post(f"/jobs/{short}/delete", data={"csrf": csrf_of(page.text)})
    assert f"Job {job_id} deleted." in client.get(answer.headers["location"]).text
    assert demo.store.get_job(job_id) is None


def test_ambiguous_prefix_is_409_listing_candidates(client: TestClient, demo: Demo) -> None:
    one = _put(demo, "feed01" + "a" * 26)
    two = _put(demo, "feed01" + "b" * 26)
    body = expect_error(client.get("/api/jobs/feed01"), 409, one, two)
    assert body["error"] == "ambiguous_id"
    expect_error(client.post("/api/jobs/feed01/cancel"), 409, "matches several jobs")
    expect_error(client.delete("/api/jobs/feed01"), 409, one, two)
    page = client.get("/jobs/feed01")
    assert page.status_code == 409
    assert one in page.text and two in page.text
    assert [j.state if j else None for j in demo.store.get_jobs([one, two])] == [
        JobState.QUEUED,
        JobState.QUEUED,
    ]
    assert client.get("/api/jobs/feed01a").json()["id"] == one


def test_unknown_prefix_is_404(client: TestClient, demo: Demo) -> None:
    _put(demo, "abcdef" + "0" * 26)
    expect_error(client.get("/api/jobs/abcdee"), 404, "job 'abcdee' not found")
    assert client.get("/jobs/abcdee").status_code == 404
    expect_error(client.get("/api/jobs/abc"), 404, "job 'abc' not found")


def test_lost_attempts_read_as_lost(client: TestClient, demo: Demo) -> None:
    job_id = _put(demo, "10577e57" + "0" * 24, lease=0.2, max_attempts=1)
    assert [j.id for j in demo.store.claim("gone", ["default"], 1)] == [job_id]
    wait_for(lambda: job_id in demo.store.recover(), what="the lease to expire")
    [claimed] = demo.store.claim("worker", ["default"], 1)
    assert demo.store.finish([Outcome(job_id, claimed.token, ok=True, result=b"3")]) == [True]

    listing = client.get("/jobs").text
    row = listing.split(f'data-job="{job_id}"', 1)[1].split("</tr>", 1)[0]
    assert re.search(r">2 \(1 lost\)</td>", row), row
    assert "2/1" not in row
    page = client.get(f"/jobs/{job_id}").text
    assert re.search(r'<dd id="attempt">2 \(1 lost\)', page)


def test_a_job_page_says_how_its_failures_are_retried(client: TestClient, demo: Demo) -> None:
    policy = '{"backoff":[2.0,60.0],"no_retry_on":["builtins.ValueError"]}'
    patient = _put(demo, "7e7e7e" + "0" * 26, max_attempts=4, retry=policy)
    once = _put(demo, "0ce0ce" + "0" * 26)
    page = client.get(f"/jobs/{patient}").text
    expected = "up to 3, backoff 2 s doubling to 60 s; never on ValueError"
    assert f'<dd id="retries">{expected}</dd>' in page
    assert '<dd id="retries">none</dd>' in client.get(f"/jobs/{once}").text


def test_a_job_that_succeeded_on_retry_shows_no_error(client: TestClient, demo: Demo) -> None:
    job_id = _put(demo, "5ecced" + "0" * 26, max_attempts=2)
    [first] = demo.store.claim("worker", ["default"], 1)
    failed = Outcome(job_id, first.token, ok=False, error="ValueError: flaky", retry_in=0.0)
    assert demo.store.finish([failed]) == [True]
    wait_for(lambda: work(demo.store, ["default"]), what="the retry to run")

    api = client.get(f"/api/jobs/{job_id[:8]}").json()
    assert (api["state"], api["error"], api["traceback"]) == ("succeeded", None, None)
    failures = [h for h in api["history"] if h["event"] == "failed"]
    assert [(h["attempt"], h["error"]) for h in failures] == [(1, "ValueError: flaky")]
    page = client.get(f"/jobs/{job_id}").text
    assert 'id="error"' not in page
    assert 'class="bad"' not in page.split("<h2>Arguments</h2>", 1)[1].split("<h2>Attempt", 1)[0]
    assert '<details id="earlier-error">' in page and "ValueError: flaky" in page


def test_a_snoozed_job_reads_as_waiting_not_failed(client: TestClient, demo: Demo) -> None:
    job_id = _put(demo, "5a0022" + "0" * 26)
    [first] = demo.store.claim("worker", ["default"], 1)
    why = "Snooze: the export is not ready"
    snoozed = Outcome(job_id, first.token, ok=False, error=why, retry_in=600.0, snooze=True)
    assert demo.store.finish([snoozed]) == [True]
    page = client.get(f"/jobs/{job_id}").text
    assert '<p id="snoozed">Snoozed until ' in page and f'<span class="mono">{why}</span>' in page
    assert 'id="error"' not in page and 'class="bad"' not in page.split("<h2>Output", 1)[0]


def test_a_failed_job_still_shows_its_error(client: TestClient, demo: Demo) -> None:
    job_id = demo.add.send(1, 1).id
    work(demo.store, ["default"], fail=lambda job: True)
    assert client.get(f"/api/jobs/{job_id}").json()["error"] == "ValueError: boom"
    page = client.get(f"/jobs/{job_id}").text
    assert '<p class="bad" id="error">ValueError: boom</p>' in page


def test_overview_tells_failed_attempts_from_failed_jobs(client: TestClient, demo: Demo) -> None:
    retried = _put(demo, "7e7e7e" + "0" * 26, max_attempts=3)
    [claimed] = demo.store.claim("worker", ["default"], 1)
    outcome = Outcome(retried, claimed.token, ok=False, error="E", retry_in=3600.0)
    assert demo.store.finish([outcome]) == [True]

    html = client.get("/").text
    assert '<a href="/jobs?state=failed" id="failed-jobs" class="">0</a>' in html
    assert re.search(r'id="failed-0">1</span> failed attempts', html)
    assert re.search(r'id="retrying-0">1</span> of them retried', html)
    assert re.search(r'id="legend-failed">1</b>', html)

    demo.add.send(2, 2)
    work(demo.store, ["default"], fail=lambda job: True)
    html = client.get("/").text
    assert '<a href="/jobs?state=failed" id="failed-jobs" class="bad">1</a>' in html
    assert re.search(r'id="failed-0">2</span> failed attempts', html)
    assert re.search(r'id="retrying-0">1</span> of them retried', html), "the final failure is not"
    live = client.get("/api/stats/live").json()
    assert [w["failed_attempts"] for w in live["windows"]] == [2, 2, 2, 2]
    assert [w["retrying"] for w in live["windows"]] == [1, 1, 1, 1]
    assert client.get("/api/stats").json()["counts"]["failed"] == 1


def test_the_api_gives_a_jobs_retry_policy_as_an_object(client: TestClient, demo: Demo) -> None:
    policy = '{"backoff":[2.0,60.0],"no_retry_on":["builtins.ValueError"]}'
    patient = _put(demo, "7e7e7f" + "0" * 26, max_attempts=4, retry=policy)
    plain = _put(demo, "0ce0cf" + "0" * 26)
    assert client.get(f"/api/jobs/{patient}").json()["retry"] == {
        "backoff": [2.0, 60.0],
        "retry_on": None,
        "no_retry_on": ["builtins.ValueError"],
    }
    assert client.get(f"/api/jobs/{plain}").json()["retry"] == {
        "backoff": [1.0, 300.0],  # the default, spelled out
        "retry_on": None,
        "no_retry_on": [],
    }
