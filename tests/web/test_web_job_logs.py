"""The job page's output panel and ``GET /api/jobs/{id}/logs`` for following it."""

from __future__ import annotations

import html as html_module
import re
from collections.abc import Callable

from starlette.testclient import TestClient

from rota._time import shown_utc
from rota.admin import Actor
from rota.models import LogChunk, Outcome
from rota.stores.base import MAX_LOG_PAGE
from web.support import OPERATOR, VIEWER, Demo, bearer, expect_error, work


def test_the_endpoint_follows_a_running_job_until_it_ends(client: TestClient, demo: Demo) -> None:
    handle = demo.add.send(1, 2)
    [job] = demo.store.claim("w1", ["default"], 1)
    demo.store.append_logs([LogChunk(job.id, 1, "stdout", "one\n")])
    first = client.get(f"/api/jobs/{handle.id[:8]}/logs").json()
    assert first["job_id"] == handle.id and first["ended"] is False
    assert [(c["attempt"], c["stream"], c["data"]) for c in first["chunks"]] == [
        (1, "stdout", "one\n")
    ]
    demo.store.append_logs([LogChunk(job.id, 1, "log", "INFO two\n")])
    second = client.get(f"/api/jobs/{handle.id}/logs", params={"after": first["last"]}).json()
    assert [c["data"] for c in second["chunks"]] == ["INFO two\n"]
    assert second["last"] > first["last"] and second["ended"] is False
    idle = client.get(f"/api/jobs/{handle.id}/logs", params={"after": second["last"]}).json()
    assert idle["chunks"] == [] and idle["last"] == second["last"] and idle["ended"] is False
    assert demo.store.finish([Outcome(job.id, job.token, ok=True, result=b"3")]) == [True]
    done = client.get(f"/api/jobs/{handle.id}/logs", params={"after": second["last"]}).json()
    assert done["chunks"] == [] and done["ended"] is True


def test_the_page_shows_each_attempts_output_and_follows_only_while_running(
    client: TestClient, demo: Demo
) -> None:
    handle = demo.add.send(1, 2)
    html = client.get(f"/jobs/{handle.id}").text
    assert 'id="job-log"' in html and 'data-follow="yes"' in html
    assert re.fullmatch(  # due when sent: "now", or a moment ago on a loaded machine
        r"The job has not started: it waits for a worker \(due (now|[\d.]+ s ago)\)\."
        r" Its output shows here as it runs\.",
        _status(html),
    ), _status(html)
    demo.store.append_logs(
        [
            LogChunk(handle.id, 1, "stdout", "<b>printed</b>\n"),
            LogChunk(handle.id, 2, "stderr", "second try\n"),
        ]
    )
    work(demo.store, ["default"])
    page = client.get(f"/jobs/{handle.id}").text
    assert 'data-follow="no"' in page
    panel = page.split('id="job-log"', 1)[1].split("</pre>", 1)[0]
    assert "&lt;b&gt;printed&lt;/b&gt;" in panel  # escaped, never markup
    text = html_module.unescape(panel)
    assert text.index("--- attempt 1 ---") < text.index("<b>printed</b>")
    assert text.index("--- attempt 2 ---") < text.index("second try")
    assert 'class="joblog-stderr"' in panel
    ended = client.get(f"/api/jobs/{handle.id}/logs").json()
    assert ended["ended"] is True and len(ended["chunks"]) == 2


def _status(page: str) -> str:
    """The words under the job page's output panel."""
    status = page.split('id="job-log-status">', 1)[1].split("</p>", 1)[0]
    return html_module.unescape(re.sub(r"<[^>]+>", "", status))


def test_the_status_line_says_a_job_not_started_has_not_and_when_it_is_due(
    client: TestClient, demo: Demo
) -> None:
    later = demo.add.send_in(48 * 60, 1, 2)
    page = client.get(f"/jobs/{later.id}").text
    assert _status(page) == (
        "The job has not started: it is due in 48 min. Its output shows here as it runs."
    )
    assert 'data-follow="yes"' in page, "followed: its output shows once it starts"

    retried = demo.fetch.options(retries=2).send("/a")
    [job] = demo.store.claim("w1", ["crawl"], 1)
    demo.store.append_logs([LogChunk(job.id, 1, "stdout", "one\n")])
    assert demo.store.finish(
        [Outcome(job.id, job.token, ok=False, error="ValueError: x", retry_in=600)]
    ) == [True]
    assert _status(client.get(f"/jobs/{retried.id}").text) == (
        "Attempt 2 has not started: it is due in 10 min."
    )

    running = demo.add.send(5, 6)
    demo.store.claim("w1", ["default"], 1)
    assert _status(client.get(f"/jobs/{running.id}").text) == (
        "No output yet. Following while the job runs."
    )


def test_the_page_of_an_ended_job_shows_a_log_longer_than_a_page_whole(
    client: TestClient, demo: Demo
) -> None:
    handle = demo.add.send(1, 2)
    lines = [f"line {i:06d}\n" for i in range(MAX_LOG_PAGE + 5)]
    demo.store.append_logs([LogChunk(handle.id, 1, "stdout", line) for line in lines])
    work(demo.store, ["default"])
    page = client.get(f"/jobs/{handle.id}").text
    assert 'data-follow="no"' in page
    panel = html_module.unescape(page.split('id="job-log"', 1)[1].split("</pre>", 1)[0])
    assert panel.count("line ") == len(lines) and f"line {MAX_LOG_PAGE + 4:06d}" in panel


def test_bad_requests_get_precise_errors(client: TestClient, demo: Demo) -> None:
    expect_error(client.get("/api/jobs/nosuchjob123/logs"), 404, "nosuchjob123")
    handle = demo.add.send(1, 2)
    expect_error(client.get(f"/api/jobs/{handle.id}/logs", params={"after": -1}), 422, "after")
    expect_error(client.get(f"/api/jobs/{handle.id}/logs", params={"attempt": 0}), 422, "attempt")


def test_viewers_read_logs_and_strangers_do_not(
    secured: Callable[[], TestClient], demo: Demo
) -> None:
    handle = demo.add.send(1, 2)
    demo.store.append_logs([LogChunk(handle.id, 1, "stdout", "hi\n")])
    c = secured()
    assert c.get(f"/api/jobs/{handle.id}/logs", headers=bearer(VIEWER)).json()["chunks"]
    assert c.get(f"/api/jobs/{handle.id}/logs", headers=bearer(OPERATOR)).status_code == 200
    expect_error(c.get(f"/api/jobs/{handle.id}/logs"), 401)


def test_the_page_heads_the_run_after_a_retry_by_hand_apart(client: TestClient, demo: Demo) -> None:
    handle = demo.add.send(1, 2)
    for line in ("first run\n", "second run\n"):
        [job] = demo.store.claim("w1", ["default"], 1)
        assert job.attempt == 1, "a retry by hand counts the attempts from 1 again"
        demo.store.append_logs([LogChunk(job.id, 1, "stdout", line, demo.store.now())])
        demo.store.finish([Outcome(job.id, job.token, ok=False, error="ValueError: no")])
        if line == "first run\n":
            demo.app.admin.retry_job(handle.id, by=Actor(name="ann", origin="web"))
    requeued = next(h for h in demo.store.get_job(handle.id).history if h["event"] == "requeued")
    when = shown_utc(requeued["at"]).strftime("%Y-%m-%d %H:%M:%S UTC")
    page = client.get(f"/jobs/{handle.id}").text
    panel = html_module.unescape(page.split('id="job-log"', 1)[1].split("</pre>", 1)[0])
    text = re.sub(r"<[^>]+>", "", panel.split(">", 1)[1])
    assert text == (
        f"--- attempt 1 ---\nfirst run\n--- attempt 1, after requeue by ann at {when} ---\n"
        "second run\n"
    )
    history = page.split('id="history"', 1)[1]
    assert "by ann" in history, "the Attempt history's requeued row, as before"


def test_a_followed_page_tells_its_script_how_to_head_the_run_to_come(
    client: TestClient, demo: Demo
) -> None:
    handle = demo.add.send(1, 2)
    [job] = demo.store.claim("w1", ["default"], 1)
    demo.store.append_logs([LogChunk(job.id, 1, "stdout", "first run\n", demo.store.now())])
    demo.store.finish([Outcome(job.id, job.token, ok=False, error="ValueError: no")])
    running = client.get(f"/jobs/{handle.id}").text  # (ended: not followed)
    assert 'data-follow="no"' in running and 'data-attempt="1" data-note=""' in running
    demo.app.admin.retry_job(handle.id, by=Actor(name="ann", origin="web"))
    demo.store.claim("w1", ["default"], 1)  # the second run, which wrote nothing yet
    page = html_module.unescape(client.get(f"/jobs/{handle.id}").text)
    assert 'data-follow="yes"' in page
    # its first line needs a heading, and the heading says which run it is
    assert re.search(r'data-attempt="" data-note=", after requeue by ann at [^"]+ UTC"', page)
