"""Server-rendered pages: what they show, and the forms that act."""

from __future__ import annotations

import html as html_module
import logging
import re
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

import rota
from conformance.support import enqueue_one, new_job
from helpers import shown_job, wait_for
from rota import _json
from rota.models import Job, JobQuery, JobState, Outcome, Schedule, WorkerInfo
from rota.scheduling import Trigger, cron
from rota.scheduling.scheduler import Scheduler
from rota.web import create_app
from rota.web._app import NAV
from web.support import BASE, OPERATOR, SECRET, Demo, bearer, csrf_of, fail_all, login, work


def _rows(html: str, table: str) -> list[str]:
    body = html.split(f'id="{table}"', 1)[1].split("</table>", 1)[0]
    return [html_module.unescape(v) for v in re.findall(r'<tr[^>]*?\sdata-[a-z]+="([^"]+)"', body)]


def test_overview_shows_queues_windows_and_chart(client: TestClient, demo: Demo) -> None:
    demo.fetch.send_many([("a",), ("b",)])
    demo.add.send_many([(1, 1), (2, 2), (3, 3)])
    work(demo.store, ["default"], fail=lambda job: job.payload.startswith(b'{"args":[1'))
    demo.store.pause_queue("crawl")
    page = client.get("/")
    assert page.status_code == 200
    html = page.text
    assert _rows(html, "queues") == ["crawl", "default"]
    crawl_row = html.split('data-queue="crawl"', 1)[1].split("</tr>", 1)[0]
    assert "paused" in crawl_row
    assert '<span data-live="windows.0.succeeded" id="succeeded-0">2</span>' in html
    assert '<span data-live="windows.3.failed_attempts" id="failed-3">1</span>' in html
    assert html.count('<rect class="ok"') == 60
    assert 'data-src="/api/stats/live"' in html
    assert '<script src="/static/rota.js" defer></script>' in html


def test_static_assets_are_served(client: TestClient) -> None:
    js = client.get("/static/rota.js")
    assert js.status_code == 200
    assert "function drawChart" in js.text
    assert "setTimeout(poll, 2000)" in js.text
    assert client.get("/static/rota.css").headers["content-type"].startswith("text/css")


def test_jobs_page_filters_and_pages(client: TestClient, demo: Demo) -> None:
    handles = demo.add.send_many([(i, i) for i in range(25)])
    demo.fetch.send("https://example.com/needle")
    page = client.get("/jobs", params={"task": "math.add", "limit": "20"})
    assert page.status_code == 200
    ids = _rows(page.text, "jobs")
    assert ids == [h.id for h in reversed(handles)][:20]
    nxt = re.search(r'href="(/jobs\?[^"]+)" rel="next"', page.text)
    assert nxt
    second = client.get(nxt.group(1).replace("&amp;", "&"))
    assert _rows(second.text, "jobs") == [h.id for h in reversed(handles)][20:]
    assert 'rel="next"' not in second.text
    assert "First page" in second.text

    found = client.get("/jobs", params={"search": "needle"})
    assert len(_rows(found.text, "jobs")) == 1
    assert "https://example.com/needle" in found.text


def test_an_empty_jobs_page_with_a_cursor_says_the_scan_goes_on(
    client: TestClient, demo: Demo, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A store that scans only so many jobs per page (Redis) answers a rare
    # match with empty pages that carry a cursor: not the end.
    handle = demo.add.send(1, 1)
    real = demo.store.list_jobs

    def scanning(query: JobQuery, limit: int = 50, cursor: str | None = None) -> Any:
        if cursor is None:
            return type(real(query, limit=limit))((), "scanned-part")
        return real(query, limit=limit)

    monkeypatch.setattr(demo.store, "list_jobs", scanning)
    page = client.get("/jobs", params={"task": "math.add"})
    assert page.status_code == 200
    assert _rows(page.text, "jobs") == []
    assert "No jobs match." not in page.text
    assert "No match in the jobs scanned so far" in page.text
    nxt = re.search(r'href="(/jobs\?[^"]+)" rel="next"', page.text)
    assert nxt
    second = client.get(nxt.group(1).replace("&amp;", "&"))
    assert _rows(second.text, "jobs") == [handle.id]


def test_jobs_page_bad_input_is_a_clear_error_page(client: TestClient) -> None:
    bad_state = client.get("/jobs", params={"state": "done"})
    assert bad_state.status_code == 400
    assert (
        "unknown state &#39;done&#39;; expected one of: scheduled, queued, running"
        in bad_state.text
    )
    bad_size = client.get("/jobs", params={"limit": "7"})
    assert bad_size.status_code == 400
    assert "page size must be one of 20, 50, 100, 200" in bad_size.text


def test_job_page_shows_error_traceback_and_lost_attempts(client: TestClient, demo: Demo) -> None:
    handle = demo.add.options(lease=0.2, retries=1).send(6, 7)
    demo.store.claim("vanished-worker", ["default"], 1)
    wait_for(lambda: demo.store.recover(), timeout=10, what="the lease to expire")
    work(demo.store, ["default"], fail=fail_all)
    job = demo.store.get_job(handle.id)
    assert job is not None and job.state is JobState.FAILED
    html = client.get(f"/jobs/{handle.id}").text
    assert '<span class="state state-failed">failed</span>' in html
    assert "ValueError: boom" in html
    assert "Traceback (most recent call last)" in html
    history = html.split('id="history"', 1)[1]
    assert '<span class="state state-lost">lost</span>' in history
    assert '<td class="mono long">vanished-worker</td>' in history
    assert '<span class="state state-failed">failed</span>' in history
    assert "1 lost" in html
    assert re.search(r'<pre class="json" id="args">\[\s*6,\s*7\s*\]</pre>', html)
    assert 'action="/jobs/' + handle.id + '/retry"' in html


def test_job_page_of_a_scheduled_job_links_its_schedule(client: TestClient, demo: Demo) -> None:
    demo.store.upsert_schedule(
        Schedule(
            name="hourly",
            task="math.add",
            trigger=cron("0 * * * *").to_json(),
            payload=b'{"args":[1,2],"kwargs":{"carry":true}}',
            next_fire=demo.store.now() + 60,
        )
    )
    client.post("/schedules/hourly/run", data={"csrf": csrf_of(client.get("/schedules").text)})
    [job] = demo.store.list_jobs(JobQuery(schedule="hourly")).jobs
    html = html_module.unescape(client.get(f"/jobs/{job.id}").text)
    assert '<a href="/schedules/hourly">hourly</a>' in html
    assert '"carry": true' in html
    work(demo.store, ["default"])
    html = html_module.unescape(client.get(f"/jobs/{job.id}").text)
    assert re.search(r'id="result">\{\s*"echo": \[\s*1,\s*2\s*\]\s*\}</pre>', html)


def test_job_actions_through_forms(client: TestClient, demo: Demo) -> None:
    failed = demo.add.send(1, 1)
    work(demo.store, ["default"], fail=fail_all)
    csrf = csrf_of(client.get(f"/jobs/{failed.id}").text)
    answer = client.post(
        f"/jobs/{failed.id}/retry", data={"csrf": csrf, "next": f"/jobs/{failed.id}"}
    )
    assert answer.headers["location"] == f"/jobs/{failed.id}"
    assert demo.store.get_job(failed.id).state is JobState.QUEUED  # type: ignore[union-attr]
    page = client.get(f"/jobs/{failed.id}")
    assert f"Job {failed.id} queued again." in page.text
    again = client.post(f"/jobs/{failed.id}/retry", data={"csrf": csrf})
    assert again.status_code == 303
    assert (
        "only failed or cancelled jobs can be retried" in client.get(again.headers["location"]).text
    )
    client.post(f"/jobs/{failed.id}/cancel", data={"csrf": csrf})
    assert demo.store.get_job(failed.id).state is JobState.CANCELLED  # type: ignore[union-attr]
    gone = client.post(f"/jobs/{failed.id}/delete", data={"csrf": csrf, "next": "/jobs"})
    assert gone.headers["location"] == "/jobs"
    assert demo.store.get_job(failed.id) is None
    assert client.get(f"/jobs/{failed.id}").status_code == 404
    unknown = client.post(f"/jobs/{failed.id}/explode", data={"csrf": csrf})
    assert unknown.status_code == 404
    assert "no job action &#39;explode&#39;; use retry, cancel or delete" in unknown.text


def test_bulk_retry_form(client: TestClient, demo: Demo) -> None:
    demo.fetch.send_many([("a",), ("b",)])
    work(demo.store, ["crawl"], fail=fail_all)
    page = client.get("/jobs", params={"queue": "crawl", "state": "failed"})
    assert 'id="retry-failed"' in page.text
    client.post(
        "/jobs/retry-failed",
        data={"csrf": csrf_of(page.text), "queue": "crawl", "task": ""},
    )
    assert [q.counts for q in demo.store.queues()] == [{JobState.QUEUED: 2}]


def test_queues_page_pause_resume_purge(client: TestClient, demo: Demo) -> None:
    demo.fetch.send_many([("a",), ("b",), ("c",)])
    page = client.get("/queues")
    assert _rows(page.text, "queues") == ["crawl"]
    csrf = csrf_of(page.text)
    client.post("/queues/crawl/pause", data={"csrf": csrf})
    assert demo.store.claim("w", ["crawl"], 5) == []
    page = client.get("/queues")
    assert "Queue crawl paused." in page.text
    assert 'action="/queues/crawl/resume"' in page.text
    client.post("/queues/crawl/resume", data={"csrf": csrf})
    assert {q.name: q.paused for q in demo.store.queues()} == {"crawl": False}

    confirm = client.get("/queues/crawl/purge")
    assert '<strong id="pending">3</strong>' in confirm.text
    assert '<input type="hidden" name="pending" value="3">' in confirm.text
    unconfirmed = client.post("/queues/crawl/purge", data={"csrf": csrf, "pending": "3"})
    assert "purge was not confirmed" in client.get(unconfirmed.headers["location"]).text
    assert len(demo.store.list_jobs(JobQuery()).jobs) == 3
    purged = client.post(
        "/queues/crawl/purge", data={"csrf": csrf, "confirm": "crawl", "pending": "3"}
    )
    assert purged.status_code == 303
    assert demo.store.list_jobs(JobQuery()).jobs == ()
    assert "Purged 3 pending jobs from queue crawl." in client.get("/queues").text
    assert client.get("/queues/nowhere/purge").status_code == 404

    client.post("/queues/pause", data={"csrf": csrf, "name": "later"})
    assert {q.name: q.paused for q in demo.store.queues()}["later"] is True


def test_a_purge_confirmed_for_fewer_jobs_than_the_queue_now_has_deletes_nothing(
    client: TestClient, demo: Demo
) -> None:
    demo.fetch.send("a")
    confirm = client.get("/queues/crawl/purge")
    assert "Yes, delete 1 pending job<" in confirm.text
    demo.fetch.send_many([(page,) for page in "bcdef"])  # arrive while it is read
    form = {"csrf": csrf_of(confirm.text), "confirm": "crawl", "pending": "1"}

    again = client.post("/queues/crawl/purge", data=form)
    assert again.status_code == 409
    changed = re.search(r'id="purge-changed"[^>]*>([^<]*)<', again.text)
    assert changed is not None and changed.group(1) == (
        "Queue crawl changed since you were asked: it has 6 pending jobs now, not 1."
        " Nothing was purged."
    )
    assert '<strong id="pending">6</strong>' in again.text
    assert "Yes, delete 6 pending jobs<" in again.text
    assert len(demo.store.list_jobs(JobQuery()).jobs) == 6
    assert demo.store.audit(limit=10)[0] == []

    no_count = client.post("/queues/crawl/purge", data=form | {"pending": ""})
    assert no_count.status_code == 409, "a form without the count it showed is asked again"
    assert len(demo.store.list_jobs(JobQuery()).jobs) == 6

    done = client.post("/queues/crawl/purge", data=form | {"pending": "6"})
    assert done.status_code == 303
    assert demo.store.list_jobs(JobQuery()).jobs == ()
    assert "Purged 6 pending jobs from queue crawl." in client.get("/queues").text
    [entry] = demo.store.audit(limit=10)[0]
    assert (entry.action, entry.details) == ("queue.purge", {"count": 6})


def test_limits_on_the_queues_page(client: TestClient, demo: Demo) -> None:
    demo.guarded.send("a")
    [claimed] = demo.store.claim("w", ["guarded"], 1)
    from rota.models import Outcome

    demo.store.finish([Outcome(claimed.id, claimed.token, ok=False, error="down")])
    page = client.get("/queues")
    assert _rows(page.text, "limits") == ["flaky-api", "site"]
    breaker_row = page.text.split('data-key="flaky-api"', 1)[1].split("</tr>", 1)[0]
    assert '<span class="badge breaker-open">open</span>' in breaker_row
    assert '<span class="muted">1 failure</span>' in breaker_row
    csrf = csrf_of(page.text)
    client.post("/limits/site/set", data={"csrf": csrf, "concurrency": "7"})
    assert {i.key: i.override for i in demo.store.limits()}["site"] == 7
    bad = client.post("/limits/site/set", data={"csrf": csrf, "concurrency": "-3"})
    assert "limit must be a non-negative integer" in client.get(bad.headers["location"]).text
    client.post("/limits/site/clear", data={"csrf": csrf})
    assert {i.key: i.override for i in demo.store.limits()}["site"] is None
    client.post("/limits/flaky-api/reset", data={"csrf": csrf})
    assert {i.key: i.open_until for i in demo.store.limits()}["flaky-api"] is None
    again = client.post("/limits/flaky-api/reset", data={"csrf": csrf})
    assert "The breaker of flaky-api was not open; nothing changed." in (
        client.get(again.headers["location"]).text
    )


def _stored_schedule(demo: Demo, trigger: Trigger, **fields: Any) -> None:
    """A schedule stored as the store holds it, firing next by ``trigger``:
    ``crawl/refresh``, the crawl's start page, unless ``fields`` say otherwise."""
    made: dict[str, Any] = {
        "name": "crawl/refresh",
        "task": "crawl.fetch",
        "payload": b'{"args":["https://example.com/"],"kwargs":{}}',
        "job_options": {"queue": "crawl"},
    }
    demo.store.upsert_schedule(
        Schedule(
            trigger=trigger.to_json(),
            next_fire=trigger.first_fire(demo.store.now()),
            **(made | fields),
        )
    )


def test_schedules_page_and_actions(client: TestClient, demo: Demo) -> None:
    trigger = cron("*/15 * * * *", tz="Asia/Shanghai")
    _stored_schedule(demo, trigger)
    page = client.get("/schedules")
    assert _rows(page.text, "schedules") == ["crawl/refresh"]
    assert f'<td class="trigger">{trigger.describe()}</td>' in page.text
    csrf = csrf_of(page.text)
    base = "/schedules/crawl%2Frefresh"
    client.post(f"{base}/pause", data={"csrf": csrf})
    assert demo.store.schedules()[0].enabled is False
    assert "Schedule crawl/refresh paused." in client.get("/schedules").text
    client.post(f"{base}/resume", data={"csrf": csrf})
    assert demo.store.schedules()[0].enabled is True
    client.post(f"{base}/run", data={"csrf": csrf})
    [claimed] = demo.store.claim("w", ["crawl"], 5)
    assert (claimed.task, claimed.schedule) == ("crawl.fetch", "crawl/refresh")
    client.post(f"{base}/remove", data={"csrf": csrf})
    assert demo.store.schedules() == []
    missing = client.post(f"{base}/run", data={"csrf": csrf})
    assert (
        "schedule &#39;crawl/refresh&#39; not found" in client.get(missing.headers["location"]).text
    )


def test_a_schedule_has_a_page_with_its_next_fires_and_its_runs_charted(
    client: TestClient, demo: Demo
) -> None:
    trigger = rota.every(60)
    options = {"queue": "crawl", "max_attempts": 3, "retry": '{"backoff":[2.0,60.0]}'}
    _stored_schedule(demo, trigger, overlap="skip", job_options=options)
    first = demo.store.schedules()[0].next_fire
    assert first is not None
    listing = client.get("/schedules").text
    assert '<a href="/schedules/crawl/refresh">crawl/refresh</a>' in listing
    csrf = csrf_of(listing)
    sent = [
        client.post("/schedules/crawl/refresh/run", data={"csrf": csrf, "next": "/"})
        for _ in range(3)
    ]
    assert [r.headers["location"] for r in sent] == ["/"] * 3
    work(demo.store, ["crawl"], fail=fail_all, limit=1)
    work(demo.store, ["crawl"], limit=1)

    page = client.get("/schedules/crawl/refresh")
    assert page.status_code == 200
    html = page.text
    assert "<h1>Schedule crawl/refresh" in html
    assert '<span class="badge running">active</span>' in html
    assert f'<dd class="trigger">{trigger.describe()}</dd>' in html
    assert "a fire is skipped" in html and '<span class="tag">queue=&#34;crawl&#34;</span>' in html
    assert '<dd id="retries">up to 2, backoff 2 s doubling to 60 s</dd>' in html
    assert "max_attempts=" not in html and "retry=" not in html  # said in words instead
    upcoming = re.findall(r'<li><time datetime="([^"]+)"', html.split('id="upcoming"', 1)[1])
    times = [datetime.fromisoformat(t).timestamp() for t in upcoming]
    assert times == [first + 60 * i for i in range(5)]
    jobs = demo.store.list_jobs(JobQuery(schedule="crawl/refresh"), limit=10).jobs
    assert _rows(html, "runs") == [j.id for j in jobs]  # newest first
    assert [j.state for j in jobs] == [JobState.QUEUED, JobState.SUCCEEDED, JobState.FAILED]
    assert "succeeded <b>1</b>" in html and "failed <b>1</b> of the last 3" in html
    chart = html.split('id="runs-chart"', 1)[1].split("</svg>", 1)[0]
    classes = re.findall(r'<rect class="run run-(\w+)"', chart)
    assert classes == ["failed", "succeeded", "queued"]  # oldest on the left
    assert f'href="/jobs/{jobs[2].id}"' in chart
    assert 'height="0.0"' in chart  # the queued one has not run

    client.post("/schedules/crawl/refresh/pause", data={"csrf": csrf})
    paused = client.get("/schedules/crawl/refresh").text
    assert "Paused: it fires again once resumed." in paused
    assert '<span class="badge paused">paused</span>' in paused
    missing = client.get("/schedules/nothing-here")
    assert missing.status_code == 404
    assert "schedule &#39;nothing-here&#39; not found" in missing.text


def test_a_one_off_schedule_that_has_fired_shows_as_done(client: TestClient, demo: Demo) -> None:
    demo.app.admin.add_schedule("once", "math.add", rota.at(datetime(2020, 1, 1)), args=[1, 2])
    Scheduler(demo.app).tick()
    stored = demo.store.get_schedule("once")
    assert stored is not None and stored.next_fire is None and stored.last_job_id is not None
    done = '<span class="badge done" title="its trigger fires no more'
    row = client.get("/schedules").text.split('data-schedule="once"', 1)[1].split("</tr>", 1)[0]
    cells = re.findall(r"<td[^>]*>(.*?)</td>", row)
    assert cells[3] == '<span class="muted">never</span>', cells  # as the CLI says
    assert cells[6].startswith(done) and "active" not in row, cells
    page = client.get("/schedules/once").text
    assert done in page.split("</h1>", 1)[0]
    assert '<dt>Next fire</dt><dd><span class="muted">never</span></dd>' in page
    assert '<p class="muted" id="upcoming">This trigger fires no more.</p>' in page
    demo.app.admin.pause_schedule("once")  # done whether paused or not
    paused = client.get("/schedules/once").text
    assert done in paused and "This trigger fires no more." in paused


def test_a_command_schedule_shows_its_command_line(client: TestClient, demo: Demo) -> None:
    _stored_schedule(
        demo,
        rota.every(3600),
        name="backup",
        task="rota.cmd",
        payload=b'{"args":[["sh","-c","pg_dump shop > /tmp/shop.sql"]],"kwargs":{"timeout":600}}',
        job_options={},
    )
    line = "sh -c 'pg_dump shop > /tmp/shop.sql'"
    page = html_module.unescape(client.get("/schedules/backup").text)
    assert f'<dd class="mono" id="command">{line}</dd>' in page
    assert '<dd id="command-options">timeout 600 s</dd>' in page
    listing = html_module.unescape(client.get("/schedules").text)
    assert f'<span class="mono">{line}</span> <span class="muted">(command)</span>' in listing


def test_pages_show_a_commands_environment_with_its_names_only(
    client: TestClient, demo: Demo
) -> None:
    demo.app.admin.add_schedule(
        "envs",
        "rota.cmd",
        rota.every(86400),
        args=[["sh", "-c", "echo $API_TOKEN"]],
        kwargs={"env": {"API_TOKEN": "s3cret"}},
    )
    schedule_page = html_module.unescape(client.get("/schedules/envs").text)
    assert '<dd id="command-options">env API_TOKEN</dd>' in schedule_page
    job_id = demo.app.admin.run_schedule_now("envs")
    job_page = html_module.unescape(client.get(f"/jobs/{job_id}").text)
    kwargs = job_page.split('<pre class="json" id="kwargs">', 1)[1].split("</pre>", 1)[0]
    assert _json.loads(kwargs) == {"env": {"API_TOKEN": "***"}}
    for path in ("/schedules/envs", f"/jobs/{job_id}", "/jobs", "/schedules"):
        assert "s3cret" not in client.get(path).text, path
    [stored] = demo.store.schedules()
    assert _json.loads(stored.payload)["kwargs"] == {"env": {"API_TOKEN": "s3cret"}}
    job = demo.store.get_job(job_id)
    assert job is not None and job.kwargs == {"env": {"API_TOKEN": "s3cret"}}, "run with it"


def test_a_command_jobs_page_shows_its_command_line_and_exit_code(
    client: TestClient, demo: Demo
) -> None:
    job_id = enqueue_one(demo.store, new_job(["./backup.sh", "--to", "s3://b k"], task="rota.cmd"))
    [claimed] = demo.store.claim("w", ["default"], 1)
    result = {"exit_code": 0, "duration": 1.5, "stdout": "done\n", "stderr": ""}
    done = Outcome(claimed.id, claimed.token, ok=True, result=_json.dumps(result))
    assert demo.store.finish([done]) == [True]
    page = html_module.unescape(client.get(f"/jobs/{job_id}").text)
    assert """<dd class="mono" id="command">./backup.sh --to 's3://b k'</dd>""" in page
    assert '<p id="exit">Exit code 0 after 1.5 s; its output is below.</p>' in page
    other = html_module.unescape(client.get(f"/jobs/{demo.add.send(1, 2).id}").text)
    assert 'id="command"' not in other
    listed = html_module.unescape(client.get("/jobs").text)
    assert "./backup.sh --to 's3://b k'</span></td>" in listed, "the list names the command"
    assert '<td class="mono args">(1, 2)</td>' in listed, "and a task's call"


def test_workers_page(client: TestClient, demo: Demo) -> None:
    demo.store.heartbeat(
        WorkerInfo(
            id="node-7:991",
            host="node-7",
            pid=991,
            queues=("crawl",),
            concurrency=16,
            mode="threads",
            running=5,
            started_at=demo.store.now() - 3600,
            cpu_percent=93.0,
            mem_percent=51.25,
            holding_back=True,
            load=0.375,
            processed=43,
            failed=27,
        )
    )
    html = client.get("/workers").text
    assert _rows(html, "workers") == ["node-7:991"]
    row = html.split('data-worker="node-7:991"', 1)[1].split("</tr>", 1)[0]
    for text in ("node-7", "991", "5 / 16", "93%", "51.25%", "37.5%", "holding back"):
        assert text in row
    header = re.search(r'<th class="num" title="([^"]*)">Succeeded / failed</th>', html)
    assert header is not None and "those that succeeded / those that failed" in header.group(1)
    assert '<td class="num" title="43 attempts succeeded, 27 failed">43 / 27</td>' in row
    gauges = re.findall(r'<meter class="gauge" min="0" max="([\d.]+)".*? value="([\d.]+)"', row)
    assert gauges == [("16", "5"), ("100", "93.0"), ("100", "51.25"), ("100", "37.5")]


def test_export_page_links_the_streamed_download(client: TestClient, demo: Demo) -> None:
    demo.add.send(1, 2)
    work(demo.store, ["default"])
    html = client.get("/export").text
    assert 'action="/api/export"' in html
    assert '<option value="math.add">' in html


def test_unknown_page_is_an_html_404(client: TestClient) -> None:
    answer = client.get("/no/such/page")
    assert answer.status_code == 404
    assert answer.headers["content-type"].startswith("text/html")
    assert "404 Not Found" in answer.text


def _nav_links(page: str) -> list[str]:
    nav = page.split("<nav>", 1)[1].split("</nav>", 1)[0]
    return re.findall(r'<a href="([^"]+)"', nav)


def test_an_error_page_keeps_the_frame_and_its_status(client: TestClient) -> None:
    missing = client.get("/jobs/0123456789abcdef0123456789abcdef")
    assert missing.status_code == 404
    assert "<title>404 Not Found · rota</title>" in missing.text
    assert _nav_links(missing.text) == [href for href, _ in NAV]
    assert '<a href="/jobs" class="active" aria-current="page">' in missing.text
    assert 'class="store"' in missing.text and 'class="role role-operator"' in missing.text
    unknown = client.get("/no/such/page")
    assert unknown.status_code == 404 and "aria-current" not in unknown.text  # no tab is it


def test_a_strangers_error_page_has_the_navigation_but_not_the_store(
    secured: Callable[[], TestClient],
) -> None:
    stranger = secured()
    answer = stranger.get("/no/such/page")
    assert answer.status_code == 404
    assert "<title>404 Not Found · rota</title>" in answer.text
    assert "/send" not in _nav_links(answer.text)  # (operators only)
    assert "/jobs" in _nav_links(answer.text)  # each link asks for a login
    assert 'class="store"' not in answer.text and 'class="role' not in answer.text
    assert "Log out" not in answer.text
    login(stranger, OPERATOR)
    known = stranger.get("/no/such/page")
    assert known.status_code == 404
    assert 'class="store"' in known.text and "Log out" in known.text
    assert "/send" in _nav_links(known.text)


def test_an_error_page_renders_while_the_store_is_down() -> None:
    app = rota.App("redis://127.0.0.1:1/0?retry_for=0.2")
    asgi = create_app(app, token=OPERATOR, secret=SECRET)
    with TestClient(asgi, base_url=BASE, client=("127.0.0.1", 50000)) as operator:
        login_page = operator.get("/login")
        assert login_page.status_code == 503
        assert _nav_links(login_page.text) == [href for href, _ in NAV if href != "/send"]
        assert 'class="store"' not in login_page.text
    app.close()


def test_a_store_that_cannot_be_reached_is_a_503_that_the_log_explains(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.ERROR, logger="rota.web")
    app = rota.App("redis://127.0.0.1:1/0?retry_for=0.2")
    asgi = create_app(app, token=OPERATOR, secret=SECRET)
    with TestClient(asgi, base_url=BASE, client=("127.0.0.1", 50000)) as anonymous:
        page = anonymous.get("/login")  # the form asks the store whether users exist
        assert page.status_code == 503
        assert "cannot be reached" in page.text
        assert "127.0.0.1:1" not in page.text
        answer = anonymous.get("/api/queues", headers=bearer(OPERATOR))
        assert answer.status_code == 503
        assert answer.json()["error"] == "store_unavailable"
    logged = [r.getMessage() for r in caplog.records]
    assert any("unreachable" in line and "127.0.0.1:1" in line for line in logged), logged
    app.close()


def test_a_store_that_does_not_exist_is_a_500_that_the_log_explains(
    caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    """``rota web --url`` opens only a store that exists: a PostgreSQL schema
    or MySQL database found missing on a page's first read is an error whose
    reason, which names the store, is in the log and not on the page."""
    caplog.set_level(logging.ERROR, logger="rota.web")
    app = rota.App(f"sqlite:///{tmp_path / 'gone.db'}")
    app.must_exist = True
    asgi = create_app(app, token=OPERATOR, secret=SECRET)
    with TestClient(asgi, base_url=BASE, client=("127.0.0.1", 50000)) as operator:
        answer = operator.get("/api/queues", headers=bearer(OPERATOR))
    assert answer.status_code == 500
    detail = "MissingStore: the request failed; the dashboard's log says why"
    assert answer.json()["detail"] == detail
    logged = [r.getMessage() for r in caplog.records]
    assert any(f"no SQLite store at {tmp_path / 'gone.db'}" in line for line in logged), logged
    assert not (tmp_path / "gone.db").exists()
    app.close()


def test_chart_scale_and_bars() -> None:
    from rota.web._chart import HEIGHT, chart, nice_max
    from rota.web._ops import ChartPoint

    assert [nice_max(v) for v in (0, 1, 2, 3, 6, 10, 11, 4999)] == [1, 1, 2, 5, 10, 10, 20, 5000]
    drawn = chart([ChartPoint(100, 8, 2), ChartPoint(101, 0, 0), ChartPoint(102, 3, 0)])
    assert drawn.scale == 10
    first, empty, third = drawn.bars
    assert (first.ok_h, first.fail_h) == (0.8 * (HEIGHT - 12), 0.2 * (HEIGHT - 12))
    assert first.fail_y + first.fail_h == first.ok_y
    assert first.ok_y + first.ok_h == HEIGHT
    assert (empty.ok_h, empty.fail_h) == (0, 0)
    assert third.x > empty.x > first.x
    assert first.title == "01:40 UTC: 8 succeeded, 2 failed attempts"
    assert (drawn.succeeded, drawn.failed_attempts) == (11, 2)
    assert [(t.label, t.at) for t in drawn.count_ticks][::5] == [("0", HEIGHT), ("10", 12)]
    assert [t.label for t in drawn.count_ticks] == ["0", "2", "4", "6", "8", "10"]
    assert [t.label for t in drawn.time_ticks] == ["01:40"]  # minute 100, every 10 minutes
    assert drawn.time_ticks[0].at == first.x + drawn.bar_width / 2
    # the hour ending on a labelled minute: its label, centred on the last
    # bar, stays inside the picture (a 10 px "HH:MM" is about 30 px wide)
    hour = chart([ChartPoint(541 + i, 1, 0) for i in range(60)])
    assert hour.time_ticks[-1].label == "10:00" and hour.bars[-1].x == 40 + 59 * 10 + 1
    assert hour.time_ticks[-1].at + 16 <= hour.width


def test_the_day_chart_counts_half_hours_of_the_last_day() -> None:
    from rota.models import MinuteStats
    from rota.web._chart import day_chart
    from rota.web._ops import DAY_BARS, _chart

    m = 1_000_020  # 11:00 UTC, a multiple of 30: the current bar starts at it
    now = m * 60 + 45.0
    rows = [
        MinuteStats(m, "q", "a", 2, 1),  # the current half hour
        MinuteStats(m - 1, "q", "a", 3, 0),  # the one before
        MinuteStats(m - 30, "r", "b", 4, 0),  # its first minute, another queue
        MinuteStats(m - 47 * 30, "q", "a", 5, 0),  # the oldest bar's first minute
        MinuteStats(m - 47 * 30 - 1, "q", "a", 100, 100),  # over a day ago
    ]
    points = _chart(rows, now, DAY_BARS, 30)
    assert len(points) == DAY_BARS == 48
    assert [(p.minute, p.succeeded, p.failed_attempts) for p in points[-2:]] == [
        (m - 30, 7, 0),
        (m, 2, 1),
    ]
    assert (points[0].minute, points[0].succeeded) == (m - 47 * 30, 5)
    assert sum(p.succeeded for p in points) == 14
    drawn = day_chart(points)
    assert drawn.bar_width == 10 and drawn.bars[1].x - drawn.bars[0].x == 12.5
    assert drawn.bars[-1].title == "11:00-11:30 UTC: 2 succeeded, 1 failed attempt"
    labels = [t.label for t in drawn.time_ticks]
    assert labels == ["12:00", "16:00", "20:00", "00:00", "04:00", "08:00"]


def test_the_overview_shows_the_day_chart_when_asked(client: TestClient, demo: Demo) -> None:
    page = client.get("/?period=day")
    assert page.status_code == 200
    assert page.text.count('<rect class="ok"') == 48
    assert 'data-key="day_chart"' in page.text and "Jobs per half hour, last day" in page.text
    assert client.get("/api/stats/live").json()["day_chart"][-1]["succeeded"] == 0
    refused = client.get("/?period=week")
    assert refused.status_code == 400
    assert "period must be hour or day, not &#39;week&#39;" in refused.text


def test_runs_chart_scales_to_the_longest_run_and_draws_a_running_one_so_far() -> None:
    from rota.web._chart import HEIGHT, TOP, nice_seconds, runs_chart

    assert [nice_seconds(v) for v in (0, 0.0031, 0.3, 1, 1.5, 7, 61)] == [
        1.0,
        0.005,
        0.5,
        1.0,
        2.0,
        10.0,
        100.0,
    ]

    def job(state: JobState, started: float | None, finished: float | None) -> Job:
        return shown_job(id=f"j{started}", state=state, started_at=started, finished_at=finished)

    newest_first = [
        job(JobState.QUEUED, None, None),
        job(JobState.SCHEDULED, 50.0, 80.0),  # its attempt failed: it runs again later
        job(JobState.RUNNING, 100.0, None),
        job(JobState.FAILED, 10.0, 10.5),
        job(JobState.SUCCEEDED, 1.0, 1.25),
    ]
    drawn = runs_chart(newest_first, now=101.5)
    assert drawn.scale == 2.0  # the running one, 1.5 s so far
    states = ["succeeded", "failed", "running", "scheduled", "queued"]
    assert [b.state for b in drawn.bars] == states
    plot = HEIGHT - TOP
    assert [b.h for b in drawn.bars] == [plot / 8, plot / 4, plot * 0.75, 0.0, 0.0]
    assert all(b.y + b.h == HEIGHT for b in drawn.bars)
    assert "running for 1.5 s" in drawn.bars[2].title
    assert "to run again" in drawn.bars[3].title
    assert "not run" in drawn.bars[4].title
    assert [s for _, s in drawn.ticks] == [0.0, 1.0, 2.0]


def test_count_ticks_are_whole_numbers() -> None:
    from rota.web._chart import count_ticks

    assert count_ticks(1) == [0, 1]
    assert count_ticks(2) == [0, 1, 2]
    assert count_ticks(5) == [0, 1, 2, 3, 4, 5]
    assert count_ticks(20) == [0, 4, 8, 12, 16, 20]
    assert count_ticks(50) == [0, 10, 20, 30, 40, 50]


def _title(page: str) -> str:
    found = re.search(r"<title>([^<]*)</title>", page)
    assert found is not None, "page has no title"
    return html_module.unescape(found.group(1))


def test_pages_of_one_thing_are_titled_after_it(
    client: TestClient, demo: Demo, secured: Callable[[], TestClient]
) -> None:
    job = demo.add.send(1, 2)
    assert _title(client.get(f"/jobs/{job.id}").text) == f"Job {job.id[:12]} · math.add · rota"
    _stored_schedule(demo, rota.every(60))
    assert _title(client.get("/schedules/crawl/refresh").text) == "Schedule crawl/refresh · rota"
    edit = client.get("/schedules/crawl/refresh/edit").text
    assert _title(edit) == "Edit schedule crawl/refresh · rota"
    assert _title(client.get("/schedules/new").text) == "New schedule · rota"
    demo.fetch.send("a")
    assert _title(client.get("/queues/crawl/purge").text) == "Purge queue crawl · rota"
    assert _title(client.get("/jobs").text) == "Jobs · rota", "a list keeps its tab's name"
    assert _title(secured().get("/login").text) == "Log in · rota"
