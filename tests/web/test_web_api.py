"""The REST API against a real store: every endpoint, its effect, and its bad input."""

from __future__ import annotations

import json
import time
from collections.abc import Callable

import pytest
from starlette.testclient import TestClient

from helpers import wait_for
from rota.models import JobState, Schedule, WorkerInfo
from rota.scheduling import every
from web.support import OPERATOR, VIEWER, Demo, bearer, csrf_of, expect_error, fail_all, work

STATES = "'scheduled', 'queued', 'running', 'succeeded', 'failed' or 'cancelled'"


def test_openapi_lists_every_endpoint(client: TestClient) -> None:
    doc = client.get("/api/openapi.json").json()
    paths = {(p, m) for p, ops in doc["paths"].items() for m in ops}
    expected = {
        ("/api/me", "get"),
        ("/api/stats", "get"),
        ("/api/stats/live", "get"),
        ("/api/queues", "get"),
        ("/api/queues/{name}/pause", "post"),
        ("/api/queues/{name}/resume", "post"),
        ("/api/queues/{name}/purge", "post"),
        ("/api/jobs", "get"),
        ("/api/jobs/retry-failed", "post"),
        ("/api/jobs/{job_id}", "get"),
        ("/api/jobs/{job_id}", "delete"),
        ("/api/jobs/{job_id}/retry", "post"),
        ("/api/jobs/{job_id}/cancel", "post"),
        ("/api/schedules", "get"),
        ("/api/schedules/{name}", "get"),
        ("/api/schedules/{name}", "delete"),
        ("/api/schedules/{name}/pause", "post"),
        ("/api/schedules/{name}/resume", "post"),
        ("/api/schedules/{name}/run", "post"),
        ("/api/workers", "get"),
        ("/api/limits", "get"),
        ("/api/limits/{key}", "put"),
        ("/api/limits/{key}", "delete"),
        ("/api/limits/{key}/reset", "post"),
        ("/api/export", "get"),
    }
    assert expected <= paths, expected - paths
    assert not any(p.startswith("/api/") is False for p, _ in paths), "pages leaked into the API"
    assert "HTTPBearer" in doc["components"]["securitySchemes"]


def test_stats_count_by_state_and_window(client: TestClient, demo: Demo) -> None:
    for n in range(3):
        demo.fetch.send(f"https://example.com/{n}")
    demo.add.send(1, 2)
    demo.add.send(3, 4)
    work(demo.store, ["default"], fail=lambda job: job.payload.startswith(b'{"args":[3'))
    stats = client.get("/api/stats").json()
    queues = {q["name"]: q for q in stats["queues"]}
    assert queues["crawl"]["counts"] == {"queued": 3}
    assert queues["default"]["counts"] == {"succeeded": 1, "failed": 1}
    assert stats["counts"] == {"queued": 3, "succeeded": 1, "failed": 1}
    windows = stats["live"]["windows"]
    assert [w["label"] for w in windows] == ["5 min", "1 hour", "1 day", "all time"]
    assert all((w["succeeded"], w["failed_attempts"]) == (1, 1) for w in windows)
    default_windows = queues["default"]["windows"]
    assert [(w["succeeded"], w["failed_attempts"]) for w in default_windows] == [(1, 1)] * 4
    assert [(w["succeeded"], w["failed_attempts"]) for w in queues["crawl"]["windows"]] == [
        (0, 0)
    ] * 4


def test_live_chart_counts_this_minute(client: TestClient, demo: Demo) -> None:
    demo.add.send_many([(i, i) for i in range(5)])
    work(demo.store, ["default"], fail=lambda job: job.payload.startswith(b'{"args":[0'))
    live = client.get("/api/stats/live").json()
    chart = live["chart"]
    assert len(chart) == 60
    assert chart[-1]["minute"] == int(live["now"] // 60)
    assert sum(p["succeeded"] for p in chart) == 4
    assert sum(p["failed_attempts"] for p in chart) == 1
    assert [p["minute"] for p in chart] == list(range(chart[0]["minute"], chart[0]["minute"] + 60))
    assert live["workers_online"] == 0


def test_queues_pause_resume_and_claims(client: TestClient, demo: Demo) -> None:
    demo.fetch.send("https://example.com/")
    assert client.post("/api/queues/crawl/pause").json()["ok"] is True
    queues = {q["name"]: q for q in client.get("/api/queues").json()}
    assert queues["crawl"]["paused"] is True
    assert demo.store.claim("w", ["crawl"], 10) == []
    client.post("/api/queues/crawl/pause")  # twice is harmless
    answer = client.post("/api/queues/crawl/resume").json()
    assert answer == {"ok": True, "message": "queue 'crawl' resumed"}
    assert len(demo.store.claim("w", ["crawl"], 10)) == 1


def test_pause_ahead_of_first_job_and_names_with_slashes(client: TestClient, demo: Demo) -> None:
    assert client.post("/api/queues/sites%2Fslow/pause").status_code == 200
    queues = {q["name"]: q for q in client.get("/api/queues").json()}
    assert queues["sites/slow"]["paused"] is True


def test_purge_deletes_pending_only(client: TestClient, demo: Demo) -> None:
    demo.fetch.send_many([("a",), ("b",), ("c",)])
    demo.fetch.send_in(3600, "later")
    running = demo.store.claim("w", ["crawl"], 1)
    answer = client.post("/api/queues/crawl/purge").json()
    assert answer["count"] == 3
    assert "purged 3 pending jobs" in answer["message"]
    left = client.get("/api/jobs", params={"queue": "crawl"}).json()["jobs"]
    assert [j["id"] for j in left] == [running[0].id]
    expect_error(client.post("/api/queues/nowhere/purge"), 404, "queue 'nowhere' not found")


def test_jobs_filters(client: TestClient, demo: Demo) -> None:
    demo.fetch.send("https://example.com/needle")
    demo.fetch.send("https://example.org/hay")
    demo.add.send(40, 2)
    work(demo.store, ["default"])

    def ids(**params: str) -> list[str]:
        return [
            j["task"] + ":" + str(j["args"])
            for j in client.get("/api/jobs", params=params).json()["jobs"]
        ]

    assert ids(queue="crawl") == [
        "crawl.fetch:['https://example.org/hay']",
        "crawl.fetch:['https://example.com/needle']",
    ]
    assert ids(task="math.add") == ["math.add:[40, 2]"]
    assert ids(state="succeeded") == ["math.add:[40, 2]"]
    assert ids(state="queued", queue="crawl", search="needle") == [
        "crawl.fetch:['https://example.com/needle']"
    ]
    assert ids(search="nothing-like-this") == []
    assert ids(queue="", task="", state="queued") == ids(state="queued")


def test_jobs_keyset_pagination_visits_every_job_once(client: TestClient, demo: Demo) -> None:
    sent = [h.id for h in demo.add.send_many([(i, i) for i in range(23)])]
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        params: dict[str, str | int] = {"limit": 10}
        if cursor:
            params["cursor"] = cursor
        body = client.get("/api/jobs", params=params).json()
        seen += [j["id"] for j in body["jobs"]]
        pages += 1
        cursor = body["next_cursor"]
        if cursor is None:
            break
    assert pages == 3
    assert seen == list(reversed(sent))


@pytest.mark.parametrize(
    ("params", "fragment"),
    [
        ({"state": "bogus"}, f"state: Input should be {STATES}"),
        ({"limit": "0"}, "limit: Input should be greater than or equal to 1"),
        ({"limit": "1001"}, "limit: Input should be less than or equal to 1000"),
        ({"limit": "ten"}, "limit: Input should be a valid integer"),
        ({"search": "x" * 201}, "search: String should have at most 200 characters"),
    ],
)
def test_jobs_bad_input_is_422_with_a_precise_message(
    client: TestClient, params: dict[str, str], fragment: str
) -> None:
    expect_error(client.get("/api/jobs", params=params), 422, fragment)


def test_jobs_bad_cursor_is_400(client: TestClient, demo: Demo) -> None:
    body = expect_error(client.get("/api/jobs", params={"cursor": "not-a-cursor"}), 400, "cursor")
    assert body["error"] == "invalid_argument"


def test_job_detail_has_everything(client: TestClient, demo: Demo) -> None:
    handle = demo.guarded.options(retries=0).send("https://example.com/x")
    work(demo.store, ["guarded"], fail=fail_all)
    job = client.get(f"/api/jobs/{handle.id}").json()
    assert job["state"] == "failed"
    assert job["args"] == ["https://example.com/x"]
    assert job["kwargs"] == {}
    assert job["error"] == "ValueError: boom"
    assert "Traceback" in job["traceback"]
    assert job["limit_keys"] == ["site", "flaky-api"]
    assert job["history"][0]["event"] == "failed"
    assert job["started_at"] >= job["run_at"] >= job["enqueued_at"] - 1
    assert job["finished_at"] >= job["started_at"]
    expect_error(client.get("/api/jobs/no-such-job"), 404, "job 'no-such-job' not found")


def test_retry_cancel_delete(client: TestClient, demo: Demo) -> None:
    failed = demo.add.send(1, 1)
    work(demo.store, ["default"], fail=fail_all)
    queued = demo.add.send(2, 2)

    expect_error(
        client.post(f"/api/jobs/{queued.id}/retry"),
        409,
        "is queued; only failed or cancelled jobs can be retried",
    )
    assert client.post(f"/api/jobs/{failed.id}/retry").json()["ok"] is True
    assert demo.store.get_job(failed.id).state is JobState.QUEUED  # type: ignore[union-attr]

    assert client.post(f"/api/jobs/{queued.id}/cancel").status_code == 200
    assert demo.store.get_job(queued.id).state is JobState.CANCELLED  # type: ignore[union-attr]
    expect_error(client.post(f"/api/jobs/{queued.id}/cancel"), 409, "is cancelled")

    claimed = demo.store.claim("w", ["default"], 1)
    expect_error(client.delete(f"/api/jobs/{claimed[0].id}"), 409, "a running job cannot")
    assert client.delete(f"/api/jobs/{queued.id}").json()["ok"] is True
    assert demo.store.get_job(queued.id) is None
    for verb in ("retry", "cancel"):
        expect_error(client.post(f"/api/jobs/nope/{verb}"), 404, "job 'nope' not found")
    expect_error(client.delete("/api/jobs/nope"), 404, "job 'nope' not found")


def test_a_running_job_is_stopped_from_its_page_and_the_api(client: TestClient, demo: Demo) -> None:
    demo.add.send(1, 1)
    [running] = demo.store.claim("w", ["default"], 1)
    page = client.get(f"/jobs/{running.id}")
    assert f'action="/jobs/{running.id}/cancel"' in page.text and ">Stop<" in page.text
    answer = client.post(f"/jobs/{running.id}/cancel", data={"csrf": csrf_of(page.text)})
    assert answer.status_code == 303
    shown = client.get(answer.headers["location"]).text
    assert (
        f"Job {running.id} runs: its worker stops it within about a second: a command or a "
        "job in processes mode is killed, an async task cancelled, and a thread task stops "
        "when it checks cancelled." in shown
    )
    client.cookies.clear()  # as an API client, without the page's session
    again = client.post(f"/api/jobs/{running.id}/cancel")
    expect_error(again, 409, f"job {running.id} runs and was already asked to stop")


def test_retry_failed_by_queue_and_task(client: TestClient, demo: Demo) -> None:
    demo.add.send_many([(1, 1), (2, 2)])
    demo.fetch.send("x")
    work(demo.store, fail=fail_all)
    body = client.post("/api/jobs/retry-failed", json={"task": "crawl.fetch"}).json()
    assert body["count"] == 1
    body = client.post("/api/jobs/retry-failed", json={"queue": "default"}).json()
    assert body == {"ok": True, "message": "retried 2 failed jobs", "count": 2}
    assert client.get("/api/jobs", params={"state": "failed"}).json()["jobs"] == []
    expect_error(client.post("/api/jobs/retry-failed", json={}), 400, "needs a queue or a task")
    expect_error(
        client.post("/api/jobs/retry-failed", json={"queue": 5}),
        422,
        "queue: Input should be a valid string",
    )


def _schedule(demo: Demo, name: str = "nightly") -> Schedule:
    trigger = every(3600)
    schedule = Schedule(
        name=name,
        task="math.add",
        trigger=trigger.to_json(),
        payload=b'{"args":[20,22],"kwargs":{}}',
        next_fire=demo.store.now() + 3600,
        job_options={"queue": "default", "max_attempts": 2},
    )
    demo.store.upsert_schedule(schedule)
    return schedule


def test_schedules_list_and_actions(client: TestClient, demo: Demo) -> None:
    _schedule(demo)
    [view] = client.get("/api/schedules").json()
    assert view["name"] == "nightly"
    assert view["description"] == every(3600).describe()
    assert view["enabled"] is True
    assert view["args"] == [20, 22]
    assert view["last_job_id"] is None
    assert (view["grace"], view["job_options"]["max_attempts"]) == (None, 2)
    assert (view["overdue"], view["command"]) == (False, "")
    assert view["job_options"]["retry"] == {
        "backoff": [1.0, 300.0],
        "retry_on": None,
        "no_retry_on": [],
    }
    assert view["retries"] == "up to 1, backoff 1 s doubling to 300 s"
    assert client.get("/api/schedules/nightly").json() == view
    missing = client.get("/api/schedules/nope")
    assert missing.status_code == 404 and "'nope' not found" in missing.text

    assert client.post("/api/schedules/nightly/pause").status_code == 200
    assert client.get("/api/schedules").json()[0]["enabled"] is False
    assert client.post("/api/schedules/nightly/resume").status_code == 200
    assert client.get("/api/schedules").json()[0]["enabled"] is True

    before = demo.store.now()
    ran = client.post("/api/schedules/nightly/run").json()
    assert ran["duplicate"] is False
    job = client.get(f"/api/jobs/{ran['job_id']}").json()
    assert (job["task"], job["args"], job["schedule"], job["max_attempts"]) == (
        "math.add",
        [20, 22],
        "nightly",
        2,
    )
    assert before <= job["fire_time"] <= demo.store.now()
    by_schedule = client.get("/api/jobs", params={"schedule": "nightly"}).json()["jobs"]
    assert [j["id"] for j in by_schedule] == [ran["job_id"]]
    assert client.get("/api/schedules").json()[0]["next_fire"] > before + 3000  # unchanged

    assert client.delete("/api/schedules/nightly").status_code == 200
    assert client.get("/api/schedules").json() == []
    for method, path in [
        ("post", "/api/schedules/nightly/pause"),
        ("post", "/api/schedules/nightly/resume"),
        ("post", "/api/schedules/nightly/run"),
        ("delete", "/api/schedules/nightly"),
    ]:
        expect_error(client.request(method, path), 404, "schedule 'nightly' not found")


def test_schedule_with_unknown_trigger_shows_its_json(client: TestClient, demo: Demo) -> None:
    demo.store.upsert_schedule(
        Schedule(
            name="odd",
            task="math.add",
            trigger={"type": "lunar", "phase": "full"},
            payload=b'{"args":[],"kwargs":{}}',
            next_fire=None,
        )
    )
    [view] = client.get("/api/schedules").json()
    assert view["description"] == '{"type":"lunar","phase":"full"}'


def test_schedule_last_job_state(client: TestClient, demo: Demo) -> None:
    schedule = _schedule(demo)
    assert schedule.next_fire is not None
    job = demo.add.new_job((1, 2), {}, job_id="fired-1")
    fired = demo.store.fire_schedule("nightly", schedule.next_fire, schedule.next_fire + 3600, job)
    assert fired == "fired"
    assert client.get("/api/schedules").json()[0]["last_job_state"] == "queued"
    work(demo.store, ["default"])
    assert client.get("/api/schedules").json()[0]["last_job_state"] == "succeeded"


def _worker(worker_id: str, running: int = 0) -> WorkerInfo:
    return WorkerInfo(
        id=worker_id,
        host="node-1",
        pid=4242,
        queues=("default", "crawl"),
        concurrency=8,
        mode="threads",
        running=running,
        started_at=time.time() - 60,
        cpu_percent=12.5,
        mem_percent=40.0,
        holding_back=True,
        processed=10,
        failed=1,
    )


def test_workers(client: TestClient, demo: Demo) -> None:
    demo.store.heartbeat(_worker("w-1", running=3))
    [w] = client.get("/api/workers").json()
    assert (w["id"], w["host"], w["pid"], w["queues"], w["running"]) == (
        "w-1",
        "node-1",
        4242,
        ["default", "crawl"],
        3,
    )
    assert (w["cpu_percent"], w["mem_percent"], w["holding_back"]) == (12.5, 40.0, True)
    assert w["lost"] is False
    assert 0 <= w["seconds_since_heartbeat"] < 30
    assert client.get("/api/stats/live").json()["workers_online"] == 1


def test_workers_silent_past_the_threshold_are_lost(demo: Demo) -> None:
    from rota.web import _ops

    demo.store.heartbeat(_worker("w-old"))
    wait_for(lambda: demo.store.now() - demo.store.workers()[0].heartbeat_at > 0.05, timeout=5)
    [view] = _ops.workers(demo.store, lost_after=0.05)
    assert view.lost is True
    [view] = _ops.workers(demo.store)
    assert view.lost is False


def test_limits_set_clear_and_breaker_reset(client: TestClient, demo: Demo) -> None:
    demo.guarded.send("a")
    demo.guarded.send("b")
    claimed = demo.store.claim("w", ["guarded"], 10)
    assert len(claimed) == 1, "a closed breaker of failures=1 admits one job in flight"
    limits = {item["key"]: item for item in client.get("/api/limits").json()}
    assert (limits["site"]["running"], limits["site"]["concurrency"]) == (1, 2)

    assert client.put("/api/limits/site", json={"concurrency": 5}).json()["ok"] is True
    site = {i["key"]: i for i in client.get("/api/limits").json()}["site"]
    assert (site["concurrency"], site["override"]) == (5, 5)
    assert client.delete("/api/limits/site").status_code == 200
    site = {i["key"]: i for i in client.get("/api/limits").json()}["site"]
    assert (site["concurrency"], site["override"]) == (2, None)
    before = client.get("/api/limits").json()
    missing = client.delete("/api/limits/nope")
    assert missing.status_code == 404 and "limit key 'nope' not found" in missing.text
    assert client.put("/api/limits/nope", json={"concurrency": None}).status_code == 404
    assert client.get("/api/limits").json() == before

    from rota.models import Outcome

    demo.store.finish([Outcome(claimed[0].id, claimed[0].token, ok=False, error="down")])
    breaker = {i["key"]: i for i in client.get("/api/limits").json()}["flaky-api"]
    assert breaker["breaker"] == "open"
    assert breaker["open_until"] > demo.store.now()
    reset = client.post("/api/limits/flaky-api/reset")
    assert (reset.status_code, reset.json()) == (
        200,
        {"ok": True, "message": "breaker of 'flaky-api' reset", "was_open": True},
    )
    breaker = {i["key"]: i for i in client.get("/api/limits").json()}["flaky-api"]
    assert breaker["breaker"] == "closed"
    audited = len(demo.store.audit()[0])
    again = client.post("/api/limits/flaky-api/reset")  # not open: not an error, no change
    assert (again.status_code, again.json()) == (
        200,
        {
            "ok": True,
            "message": "the breaker of 'flaky-api' was not open; nothing changed",
            "was_open": False,
        },
    )
    assert len(demo.store.audit()[0]) == audited, "nothing changed, nothing recorded"
    expect_error(client.post("/api/limits/no-key/reset"), 404, "limit key 'no-key' not found")


def test_a_rate_override_is_set_shown_and_cleared(client: TestClient, demo: Demo) -> None:
    key = "api.example"
    answer = client.put(f"/api/limits/{key}/rate", json={"rate": "30/m"})
    assert answer.json() == {"ok": True, "message": f"rate of {key!r} set to 30/m"}
    limit = {i["key"]: i for i in client.get("/api/limits").json()}[key]
    assert limit["rate_override"] == 0.5
    assert client.put(f"/api/limits/{key}/rate", json={"rate": 4}).json()["ok"] is True
    assert {i["key"]: i for i in client.get("/api/limits").json()}[key]["rate_override"] == 4.0
    expect_error(client.put(f"/api/limits/{key}/rate", json={"rate": "fast"}), 400, "not valid")
    expect_error(client.put(f"/api/limits/{key}/rate", json={"rate": 0}), 400, "rate")
    assert {i["key"]: i for i in client.get("/api/limits").json()}[key]["rate_override"] == 4.0
    cleared = client.put(f"/api/limits/{key}/rate", json={"rate": None}).json()
    assert cleared["message"] == f"rate override of {key!r} cleared"
    assert {i["key"]: i for i in client.get("/api/limits").json()}[key]["rate_override"] is None
    assert demo.store.limits(), "the store holds what the API set"


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ({"concurrency": -1}, "concurrency: Input should be greater than or equal to 0"),
        ({"concurrency": "many"}, "concurrency: Input should be a valid integer"),
        ({}, "concurrency: Field required"),
    ],
)
def test_limit_bad_input(client: TestClient, body: dict[str, object], fragment: str) -> None:
    expect_error(client.put("/api/limits/site", json=body), 422, fragment)


def test_me_and_unknown_api_path(client: TestClient) -> None:
    assert client.get("/api/me").json() == {"role": "operator"}
    expect_error(client.get("/api/nothing-here"), 404, "Not Found")
    expect_error(client.post("/api/stats"), 405, "Method Not Allowed")


def _command_job(demo: Demo, script: str, kwargs: dict[str, object]) -> str:
    """The job of a command schedule ``envs`` run now: ``sh -c script``, with ``kwargs``."""
    demo.app.admin.add_schedule(
        "envs", "rota.cmd", every(86400), args=[["sh", "-c", script]], kwargs=kwargs
    )
    return str(demo.app.admin.run_schedule_now("envs"))


def test_a_viewers_search_does_not_find_a_job_by_a_hidden_value(
    secured: Callable[[], TestClient], demo: Demo
) -> None:
    job_id = _command_job(demo, "echo $DB_PASSWORD", {"env": {"DB_PASSWORD": "hunter2secret"}})
    c = secured()

    def found(token: str, search: str) -> list[str]:
        answer = c.get("/api/jobs", params={"search": search}, headers=bearer(token))
        return [job["id"] for job in answer.json()["jobs"]]

    for search in ("hunter2", '"DB_PASSWORD":"hunt', "secret"):
        assert found(OPERATOR, search) == [job_id]
        assert found(VIEWER, search) == [], search
    for search in ("DB_PASSWORD", "echo $DB"):  # what a viewer is shown
        assert found(VIEWER, search) == [job_id]
    for search, shown in (("hunter2", False), ("DB_PASSWORD", True)):  # pages hide it too
        page = c.get("/jobs", params={"search": search}, headers=bearer(VIEWER))
        assert page.status_code == 200 and (job_id in page.text) is shown


def test_operators_read_a_commands_environment_and_viewers_its_names_only(
    secured: Callable[[], TestClient], demo: Demo
) -> None:
    job_id = _command_job(demo, "echo $API_TOKEN", {"env": {"API_TOKEN": "s3cret"}, "timeout": 60})
    work(demo.store)  # (the export has the jobs that succeeded)
    c = secured()
    for token, value in ((OPERATOR, "s3cret"), (VIEWER, "***")):
        kwargs = {"env": {"API_TOKEN": value}, "timeout": 60}
        headers = bearer(token)
        assert c.get(f"/api/jobs/{job_id}", headers=headers).json()["kwargs"] == kwargs
        assert [j["kwargs"] for j in c.get("/api/jobs", headers=headers).json()["jobs"]] == [kwargs]
        assert c.get("/api/schedules/envs", headers=headers).json()["kwargs"] == kwargs
        assert [s["kwargs"] for s in c.get("/api/schedules", headers=headers).json()] == [kwargs]
        exported = c.get("/api/export", headers=headers)
        assert json.loads(exported.text)["kwargs"] == kwargs, exported.text
        assert c.get("/api/schedules/envs", headers=headers).json()["command_options"] == (
            "timeout 60 s, env API_TOKEN"
        )
