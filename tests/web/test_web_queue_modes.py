"""The queues page and the API show each queue's mode and the job that
paused a debug queue, on every store."""

from __future__ import annotations

from starlette.testclient import TestClient

from rota.models import Outcome
from web.support import Demo


def _row(html: str, queue: str) -> str:
    return html.split(f'data-queue="{queue}"', 1)[1].split("</tr>", 1)[0]


def test_the_queues_page_shows_modes_and_links_the_failed_job(
    client: TestClient, demo: Demo
) -> None:
    demo.add.send_many([(1, 1), (2, 2)])
    demo.fetch.send("a")
    demo.store.set_queue_mode("default", "debug")
    demo.store.set_queue_mode("crawl", "paused")
    html = client.get("/queues").text
    assert '<span class="badge debug">debug</span>' in _row(html, "default")
    assert '<span class="badge paused">paused</span>' in _row(html, "crawl")
    assert "debug-job" not in html

    job = demo.store.claim("w", ["default"], 1)[0]
    assert demo.store.finish([Outcome(job.id, job.token, ok=False, error="boom")]) == [True]
    row = _row(client.get("/queues").text, "default")
    assert '<span class="badge paused">paused</span>' in row
    assert f'<a class="mono debug-job" href="/jobs/{job.id}"' in row
    assert f">{job.id[:12]}</a>" in row
    assert client.get(f"/jobs/{job.id}").status_code == 200

    listed = {q["name"]: q for q in client.get("/api/queues").json()}
    assert listed["default"]["mode"] == "paused"
    assert listed["default"]["paused"] is True
    assert listed["default"]["debug_job"] == job.id
    assert (listed["crawl"]["mode"], listed["crawl"]["debug_job"]) == ("paused", None)

    demo.store.set_queue_mode("default", "running")
    row = _row(client.get("/queues").text, "default")
    assert '<span class="badge running">running</span>' in row
    assert "debug-job" not in row
