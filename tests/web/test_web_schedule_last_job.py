"""A schedule's last job as the API and the pages show it: why it failed
(its error's first line, linked to the job), the fire time of the last job
actually sent, and a last fire that sent no job (dropped or skipped) told
apart from one that did."""

from __future__ import annotations

import html
from dataclasses import replace

from starlette.testclient import TestClient

from rota.models import Outcome, Schedule
from rota.scheduling import every
from web.support import Demo, work

ERROR = "ValueError: the backup disk is full\nsecond line of the message"


def _schedule(demo: Demo, name: str = "backup") -> Schedule:
    schedule = Schedule(
        name=name,
        task="math.add",
        trigger=every(3600).to_json(),
        payload=b'{"args":[1,2],"kwargs":{}}',
        next_fire=demo.store.now() - 7200,
        job_options={"queue": "default", "max_attempts": 1},
    )
    demo.store.upsert_schedule(schedule)
    return schedule


def _fire_and_fail(demo: Demo, fire: float, job_id: str = "backup-1") -> None:
    job = replace(demo.add.new_job((1, 2), {}, job_id=job_id), schedule="backup", fire_time=fire)
    assert demo.store.fire_schedule("backup", fire, fire + 3600, job) == "fired"
    [claimed] = demo.store.claim("test-worker", ["default"], 1)
    outcome = Outcome(claimed.id, claimed.token, ok=False, error=ERROR, traceback="Traceback")
    assert demo.store.finish([outcome])


def test_the_api_gives_the_last_jobs_error_and_fire_time(client: TestClient, demo: Demo) -> None:
    first = _schedule(demo).next_fire
    assert first is not None
    _fire_and_fail(demo, first)
    view = client.get("/api/schedules/backup").json()
    assert (view["last_job_id"], view["last_job_state"]) == ("backup-1", "failed")
    assert view["last_job_error"] == ERROR
    assert view["last_job_fire"] == first == view["last_fire"]
    assert client.get("/api/schedules").json()[0]["last_job_error"] == ERROR


def test_a_succeeded_or_pending_last_job_has_no_error(client: TestClient, demo: Demo) -> None:
    first = _schedule(demo).next_fire
    assert first is not None
    job = replace(demo.add.new_job((1, 2), {}, job_id="ok-1"), schedule="backup", fire_time=first)
    assert demo.store.fire_schedule("backup", first, first + 3600, job) == "fired"
    assert client.get("/api/schedules/backup").json()["last_job_error"] is None
    work(demo.store, ["default"])
    view = client.get("/api/schedules/backup").json()
    assert (view["last_job_state"], view["last_job_error"]) == ("succeeded", None)


def test_the_pages_show_why_the_last_job_failed_linked_to_it(
    client: TestClient, demo: Demo
) -> None:
    first = _schedule(demo).next_fire
    assert first is not None
    _fire_and_fail(demo, first)
    line = html.escape("ValueError: the backup disk is full")
    listing = client.get("/schedules").text
    assert f'<a class="last-error bad mono" href="/jobs/backup-1" title="{line}">{line}</a>' in (
        listing
    )
    assert "second line" not in listing
    page = client.get("/schedules/backup").text
    assert (
        '<dd id="last-error"><a class="bad mono" href="/jobs/backup-1" '
        f'title="the job, with its traceback">{line}</a></dd>'
    ) in page
    assert "no job sent" not in page


def test_a_fire_dropped_after_a_job_reads_as_no_job_sent(client: TestClient, demo: Demo) -> None:
    first = _schedule(demo).next_fire
    assert first is not None
    _fire_and_fail(demo, first)
    assert demo.store.fire_schedule("backup", first + 3600, first + 7200, None) == "dropped"
    view = client.get("/api/schedules/backup").json()
    assert (view["last_fire"], view["last_job_fire"]) == (first + 3600, first)
    row = client.get("/schedules").text.split('data-schedule="backup"')[1].split("</tr>")[0]
    assert '<span class="no-job"' in row and ">no job</span>" in row
    page = client.get("/schedules/backup").text
    assert "no job sent: dropped or skipped (the scheduler's log says why)" in page
    assert '<dd id="last-job"><a class="mono" href="/jobs/backup-1">backup-1</a>' in page


def test_a_schedule_whose_only_fire_was_dropped_has_no_last_job(
    client: TestClient, demo: Demo
) -> None:
    first = _schedule(demo).next_fire
    assert first is not None
    assert demo.store.fire_schedule("backup", first, first + 3600, None) == "dropped"
    view = client.get("/api/schedules/backup").json()
    assert (view["last_fire"], view["last_job_id"], view["last_job_fire"]) == (first, None, None)
    assert "no job sent" in client.get("/schedules/backup").text


def test_a_schedule_that_never_fired_shows_no_dropped_fire(client: TestClient, demo: Demo) -> None:
    _schedule(demo)
    assert "no-job" not in client.get("/schedules").text.split("<tbody>")[1]
    assert "no job sent" not in client.get("/schedules/backup").text
