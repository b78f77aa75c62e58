"""Results export (streamed JSON Lines and CSV) and the Prometheus metrics."""

from __future__ import annotations

import csv
import io
import json

from prometheus_client.parser import text_string_to_metric_families
from starlette.testclient import TestClient

from conformance.support import new_job, schedule
from rota.models import WorkerInfo
from web.support import Demo, expect_error, fail_all, work


def _finished(demo: Demo) -> None:
    demo.fetch.send_many([(f"https://example.com/{i}",) for i in range(3)])
    demo.add.send_many([(i, 10) for i in range(2)])
    demo.add.send(99, 99)
    work(demo.store, ["default", "crawl"], fail=lambda job: b"99" in job.payload)


def test_export_csv_of_a_task(client: TestClient, demo: Demo) -> None:
    _finished(demo)
    answer = client.get("/api/export", params={"task": "math.add", "format": "csv"})
    assert answer.status_code == 200
    assert answer.headers["content-type"] == "text/csv; charset=utf-8"
    assert answer.headers["content-disposition"] == 'attachment; filename="results-math.add.csv"'
    rows = list(csv.DictReader(io.StringIO(answer.text)))
    assert [(r["task"], json.loads(r["args"]), json.loads(r["result"])) for r in rows] == [
        ("math.add", [1, 10], {"echo": [1, 10]}),
        ("math.add", [0, 10], {"echo": [0, 10]}),
    ]  # the failed job is not a result
    assert all(r["finished_at"].endswith("+00:00") and r["attempt"] == "1" for r in rows)
    assert list(rows[0]) == [
        "id",
        "task",
        "queue",
        "args",
        "kwargs",
        "result",
        "attempt",
        "enqueued_at",
        "started_at",
        "finished_at",
        "schedule",
    ]


def test_export_jsonl_of_a_queue(client: TestClient, demo: Demo) -> None:
    _finished(demo)
    answer = client.get("/api/export", params={"queue": "crawl", "format": "jsonl"})
    assert answer.headers["content-type"] == "application/x-ndjson"
    lines = [json.loads(line) for line in answer.text.splitlines()]
    assert [line["args"] for line in lines] == [[f"https://example.com/{i}"] for i in (2, 1, 0)]
    assert all(line["result"] == {"echo": line["args"]} for line in lines)
    everything = client.get("/api/export").text.splitlines()
    assert len(everything) == 5


def test_export_streams_many_rows_in_chunks(client: TestClient, demo: Demo) -> None:
    demo.add.send_many([(i, i) for i in range(2500)])
    while work(demo.store, ["default"], limit=500):
        pass
    with client.stream("GET", "/api/export", params={"format": "csv"}) as answer:
        chunks = list(answer.iter_raw())
    assert len(chunks) > 3  # streamed in pieces, not one body
    rows = list(csv.DictReader(io.StringIO(b"".join(chunks).decode())))
    assert len(rows) == 2500
    assert len({r["id"] for r in rows}) == 2500


def test_export_bad_input(client: TestClient) -> None:
    expect_error(
        client.get("/api/export", params={"format": "xlsx"}),
        422,
        "format: Input should be 'jsonl', 'json' or 'csv'",
    )
    empty = client.get("/api/export", params={"queue": "nothing", "format": "csv"})
    assert empty.text.strip() == ",".join(
        [
            "id",
            "task",
            "queue",
            "args",
            "kwargs",
            "result",
            "attempt",
            "enqueued_at",
            "started_at",
            "finished_at",
            "schedule",
        ]
    )


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def test_metrics_read_the_store_on_scrape(client: TestClient, demo: Demo) -> None:
    _finished(demo)
    demo.fetch.send("pending")
    demo.store.pause_queue("crawl")
    demo.store.heartbeat(
        WorkerInfo(
            id="w-1",
            host="node-1",
            pid=1,
            queues=("default",),
            concurrency=4,
            mode="threads",
            running=2,
            started_at=demo.store.now(),
        )
    )
    answer = client.get("/metrics")
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/plain")
    s = _samples(answer.text)
    assert s[("rota_jobs", (("queue", "crawl"), ("state", "queued")))] == 1
    assert s[("rota_jobs", (("queue", "crawl"), ("state", "succeeded")))] == 3
    assert s[("rota_jobs", (("queue", "default"), ("state", "failed")))] == 1
    assert s[("rota_queue_paused", (("queue", "crawl"),))] == 1
    assert s[("rota_queue_paused", (("queue", "default"),))] == 0
    assert s[("rota_jobs_succeeded_total", (("queue", "default"), ("task", "math.add")))] == 2
    assert s[("rota_jobs_failed_total", (("queue", "default"), ("task", "math.add")))] == 1
    assert s[("rota_workers", (("status", "online"),))] == 1
    assert s[("rota_workers", (("status", "lost"),))] == 0
    assert s[("rota_worker_running_jobs", (("host", "node-1"), ("worker", "w-1")))] == 2
    wait = s[("rota_recent_wait_seconds", (("quantile", "0.5"),))]
    run = s[("rota_recent_run_seconds", (("quantile", "0.99"),))]
    assert 0 <= wait < 60 and 0 <= run < 60


def test_metrics_of_limits(client: TestClient, demo: Demo) -> None:
    demo.guarded.send("a")
    demo.store.claim("w", ["guarded"], 1)
    s = _samples(client.get("/metrics").text)
    assert s[("rota_limit_running", (("key", "site"),))] == 1
    assert s[("rota_limit_concurrency", (("key", "site"),))] == 2
    assert s[("rota_limit_breaker", (("key", "flaky-api"), ("state", "closed")))] == 1
    assert s[("rota_limit_breaker_failures", (("key", "flaky-api"),))] == 0
    assert not any(name == "rota_limit_rate" for name, _ in s)


def test_metrics_of_a_rate_and_an_open_breaker(client: TestClient, demo: Demo) -> None:
    demo.guarded.send("a")
    work(demo.store, ["guarded"], fail=fail_all)  # Breaker(failures=1): it opens
    demo.app.limits.set_rate("site", "30/m")
    s = _samples(client.get("/metrics").text)
    assert s[("rota_limit_rate", (("key", "site"),))] == 0.5
    assert s[("rota_limit_breaker", (("key", "flaky-api"), ("state", "open")))] == 1
    assert ("rota_limit_breaker", (("key", "flaky-api"), ("state", "closed"))) not in s
    assert s[("rota_limit_breaker_failures", (("key", "flaky-api"),))] == 1


def test_metrics_of_an_empty_store(client: TestClient, demo: Demo) -> None:
    s = _samples(client.get("/metrics").text)
    assert s[("rota_workers", (("status", "online"),))] == 0
    assert not any(name == "rota_recent_wait_seconds" for name, _ in s)


def test_failed_jobs_are_in_metrics_but_not_exports(client: TestClient, demo: Demo) -> None:
    demo.add.send(1, 1)
    work(demo.store, ["default"], fail=fail_all)
    assert client.get("/api/export").text == ""
    s = _samples(client.get("/metrics").text)
    assert s[("rota_jobs_failed_total", (("queue", "default"), ("task", "math.add")))] == 1


def test_metrics_of_schedules_say_which_stopped_firing_and_how_its_last_job_ended(
    client: TestClient, demo: Demo
) -> None:
    now = demo.store.now()
    demo.store.upsert_schedule(schedule("nightly", next_fire=now, task="math.add"))
    demo.store.upsert_schedule(schedule("stale", next_fire=now - 3600, task="math.add"))
    demo.store.upsert_schedule(schedule("off", next_fire=now - 3600, enabled=False))
    fired = new_job(job_id="n-1", task="math.add", schedule="nightly", fire_time=now)
    assert demo.store.fire_schedule("nightly", now, now + 86400, fired) == "fired"
    work(demo.store, ["default"], fail=fail_all)
    s = _samples(client.get("/metrics").text)

    def of(name: str, schedule_name: str, **labels: str) -> float | None:
        key = tuple(sorted({"schedule": schedule_name, **labels}.items()))
        return s.get((name, key))

    assert [of("rota_schedule_enabled", n) for n in ("nightly", "stale", "off")] == [1, 1, 0]
    assert [of("rota_schedule_overdue", n) for n in ("nightly", "stale", "off")] == [0, 1, 0]
    assert of("rota_schedule_next_fire_timestamp_seconds", "nightly") == now + 86400
    assert of("rota_schedule_last_fire_timestamp_seconds", "nightly") == now
    assert of("rota_schedule_last_fire_timestamp_seconds", "stale") is None  # never fired
    assert of("rota_schedule_last_job", "nightly", state="failed") == 1
    assert not any(n == "rota_schedule_last_job" and ("schedule", "stale") in k for n, k in s)


def test_a_fire_dropped_without_a_job_moves_the_last_fire_but_not_the_last_jobs_fire(
    client: TestClient, demo: Demo
) -> None:
    """A nightly fire dropped (older than the grace) sends no job: the
    last-job fire time stays on the last job sent, so an alert on it fires."""
    now = demo.store.now()
    yesterday = now - 86400
    demo.store.upsert_schedule(schedule("backup", next_fire=yesterday, task="math.add"))
    sent = new_job(job_id="b-1", task="math.add", schedule="backup", fire_time=yesterday)
    assert demo.store.fire_schedule("backup", yesterday, now, sent) == "fired"
    assert demo.store.fire_schedule("backup", now, now + 86400, None) == "dropped"
    demo.store.upsert_schedule(schedule("new", next_fire=now + 60, task="math.add"))
    s = _samples(client.get("/metrics").text)

    def of(name: str, schedule_name: str) -> float | None:
        return s.get((name, (("schedule", schedule_name),)))

    assert of("rota_schedule_last_fire_timestamp_seconds", "backup") == now
    assert of("rota_schedule_last_job_fire_timestamp_seconds", "backup") == yesterday
    assert of("rota_schedule_last_job_fire_timestamp_seconds", "new") is None  # no job yet
