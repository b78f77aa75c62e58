"""The dashboard's forms and their API: send a job, create and edit a schedule,
set a queue's mode. Good input writes through app.admin; bad input is shown
beside its field with the precise message and writes nothing; viewers get 403.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable
from typing import Any

import pytest
from starlette.testclient import TestClient

from rota.errors import UnknownTask
from rota.models import JobQuery
from rota.scheduling import every
from web.support import OPERATOR, VIEWER, Demo, bearer, csrf_of, expect_error, login

SCHEDULE_FORM = {
    "name": "nightly",
    "task": "math.add",
    "kind": "every",
    "interval": "30",
    "tz": "UTC",
    "args": "[1, 2]",
    "kwargs": "{}",
    "jitter": "0",
    "misfire": "coalesce",
    "overlap": "allow",
    "enabled": "on",
}


def _csrf(client: TestClient, path: str = "/send") -> str:
    page = client.get(path)
    assert page.status_code == 200, page.text
    return csrf_of(page.text)


def _field_errors(text: str) -> dict[str, str]:
    found = re.findall(r'<span class="field-error" id="error-([a-z_]+)"[^>]*>([^<]*)</span>', text)
    return {name: html.unescape(message) for name, message in found}


def _jobs(demo: Demo) -> list[Any]:
    return list(demo.store.list_jobs(JobQuery(), limit=100).jobs)


def _flashes(client: TestClient, path: str) -> list[str]:
    page = client.get(path).text
    return [html.unescape(m) for m in re.findall(r'class="flash flash-\w+"[^>]*>([^<]*)<', page)]


# -- send a job --------------------------------------------------------------------


def test_send_form_lists_the_registered_tasks(client: TestClient) -> None:
    page = client.get("/send", params={"task": "crawl.fetch"})
    assert page.status_code == 200
    options = re.findall(r'<option value="([^"]+)"( selected)?>', page.text)
    assert options == [("crawl.fetch", " selected"), ("guarded.call", ""), ("math.add", "")]
    assert 'href="/send"' in page.text  # in the navigation


def test_send_form_sends_the_job_and_shows_it(client: TestClient, demo: Demo) -> None:
    csrf = _csrf(client)
    form = {"csrf": csrf, "task": "math.add", "args": "[1, 2]", "kwargs": "{}"}
    form |= {"queue": "fast", "priority": "5", "retries": "2", "delay": "5m"}
    answer = client.post("/send", data=form)
    assert answer.status_code == 303
    job_id = answer.headers["location"].removeprefix("/jobs/")
    job = demo.store.get_job(job_id)
    assert job is not None
    assert (job.task, job.args, job.kwargs) == ("math.add", [1, 2], {})
    assert (job.queue, job.priority, job.max_attempts) == ("fast", 5, 3)
    assert job.state.value == "scheduled"
    assert job.run_at == pytest.approx(job.enqueued_at + 300, abs=1)
    assert _flashes(client, f"/jobs/{job_id}") == [f"Sent job {job_id}."]


def test_send_form_keyword_arguments_and_the_task_defaults(client: TestClient, demo: Demo) -> None:
    data = {"csrf": _csrf(client), "task": "crawl.fetch", "args": "", "kwargs": '{"page": "/a"}'}
    answer = client.post("/send", data=data)
    assert answer.status_code == 303
    job = demo.store.get_job(answer.headers["location"].removeprefix("/jobs/"))
    assert job is not None
    assert (job.queue, job.args, job.kwargs, job.state.value) == (
        "crawl",
        [],
        {"page": "/a"},
        "queued",
    )


BAD_SENDS = [
    ({"args": "[1, "}, "args", "args: not valid JSON: Expecting value"),
    ({"args": "[1, NaN]"}, "args", "args: NaN is not JSON (JSON has no NaN or infinity)"),
    ({"kwargs": '{"a": Infinity}'}, "kwargs", "kwargs: Infinity is not JSON"),
    ({"args": '{"a": 1}'}, "args", "args must be a JSON array, not an object"),
    ({"args": '"home"'}, "args", 'args must be a JSON array, not the string "home"'),
    ({"kwargs": "[1]"}, "kwargs", "kwargs must be a JSON object, not an array"),
    ({"task": "nope"}, "task", "unknown task 'nope' (registered: crawl.fetch, guarded.call"),
    ({"task": ""}, "task", "choose a task, or type a command line"),
    ({"task": "", "command": "echo 'open"}, "command", "cannot be split: No closing quotation"),
    ({"command": "echo hi"}, "task", "a command line runs as rota.cmd: leave the task empty"),
    ({"task": "rota.cmd"}, "command", "rota.cmd needs a command line"),
    ({"priority": "high"}, "priority", "priority must be an integer, not 'high'"),
    ({"retries": "-1"}, "retries", "retries must be a non-negative integer, not -1"),
    ({"queue": "q" * 201}, "queue", "is 201 characters; at most 200 are allowed"),
    ({"delay": "soon"}, "delay", "delay 'soon' is not a duration"),
    ({"host": "h" * 201}, "host", "host 'hhhh"),
    ({"cmd_timeout": "60"}, "cmd_timeout", "a command timeout goes with a command line"),
    (
        {"task": "", "command": "./sync.sh", "cmd_timeout": "soon"},
        "cmd_timeout",
        "command timeout 'soon' is not a duration",
    ),
    (
        {"task": "", "command": "./sync.sh", "cmd_timeout": "0"},
        "cmd_timeout",
        "command timeout must be above 0, got 0",
    ),
    (
        {"task": "", "command": "./sync.sh", "cmd_timeout": "60", "kwargs": '{"timeout": 5}'},
        "cmd_timeout",
        "the keyword arguments give the command a timeout too: give it in one place",
    ),
]


@pytest.mark.parametrize(("change", "field", "message"), BAD_SENDS)
def test_send_form_refuses_bad_input_beside_its_field(
    client: TestClient, demo: Demo, change: dict[str, str], field: str, message: str
) -> None:
    data = {"csrf": _csrf(client), "task": "math.add", "args": "[1, 2]", "kwargs": "{}"} | change
    answer = client.post("/send", data=data)
    assert answer.status_code == 400
    errors = _field_errors(answer.text)
    assert list(errors) == [field], errors
    assert message in errors[field]
    assert data["args"].strip() in html.unescape(answer.text)  # the form keeps what was typed
    assert _jobs(demo) == []


def test_send_form_sends_a_command_line_as_a_rota_cmd_job(client: TestClient, demo: Demo) -> None:
    data = {"csrf": _csrf(client), "task": "", "args": "[]", "kwargs": '{"timeout": 30}'}
    answer = client.post("/send", data=data | {"command": "python crawl.py --site 'a b'"})
    assert answer.status_code == 303
    job = demo.store.get_job(answer.headers["location"].removeprefix("/jobs/"))
    assert job is not None
    assert (job.task, job.args, job.kwargs) == (
        "rota.cmd",
        [["python", "crawl.py", "--site", "a b"]],
        {"timeout": 30},
    )
    # the dashboard's app (a worker's too, under rota run) does not run them for it
    assert "rota.cmd" not in demo.app.tasks
    form = SCHEDULE_FORM | {"task": "", "command": "./backup.sh", "csrf": _csrf(client)}
    assert client.post("/schedules/new", data=form).status_code == 303
    assert "rota.cmd" not in demo.app.tasks
    [claimed] = demo.store.claim("w", ["default"], 1)
    with pytest.raises(UnknownTask, match="start the worker with --commands"):
        demo.app.get_task(claimed.task)


def test_a_command_timeout_has_a_field_of_its_own(client: TestClient, demo: Demo) -> None:
    data = {"csrf": _csrf(client), "task": "", "args": "[]", "kwargs": "{}"}
    answer = client.post("/send", data=data | {"command": "./sync.sh", "cmd_timeout": "15m"})
    assert answer.status_code == 303, _field_errors(answer.text)
    job = demo.store.get_job(answer.headers["location"].removeprefix("/jobs/"))
    assert job is not None and (job.args, job.kwargs) == ([["./sync.sh"]], {"timeout": 900.0})

    form = SCHEDULE_FORM | {"task": "", "command": "./backup.sh", "cmd_timeout": "90"}
    answer = client.post("/schedules/new", data=form | {"csrf": _csrf(client, "/schedules/new")})
    assert answer.status_code == 303, _field_errors(answer.text)
    assert json.loads(demo.store.schedules()[0].payload)["kwargs"] == {"timeout": 90.0}
    page = client.get("/schedules/nightly/edit").text
    assert 'name="cmd_timeout" value="90"' in page
    assert ">{}</textarea>" in page  # the timeout is not shown twice

    edit = "/schedules/nightly/edit"
    shown = dict(re.findall(r'<input name="(\w+)" value="([^"]*)"', page))
    form |= {k: html.unescape(v) for k, v in shown.items()} | {"task": "rota.cmd", "args": "[]"}
    answer = client.post(edit, data=form | {"csrf": csrf_of(page)})
    assert answer.status_code == 303, _field_errors(answer.text)
    assert _flashes(client, "/schedules") == ["Schedule nightly is unchanged."]
    answer = client.post(edit, data=form | {"cmd_timeout": "2h", "csrf": _csrf(client, edit)})
    assert answer.status_code == 303, _field_errors(answer.text)
    assert json.loads(demo.store.schedules()[0].payload)["kwargs"] == {"timeout": 7200.0}
    answer = client.post(edit, data=form | {"cmd_timeout": "", "csrf": _csrf(client, edit)})
    assert answer.status_code == 303, _field_errors(answer.text)
    assert json.loads(demo.store.schedules()[0].payload)["kwargs"] == {}, "blank: no timeout"


def test_a_job_and_a_schedule_sent_to_a_host_from_the_forms(client: TestClient, demo: Demo) -> None:
    data = {"csrf": _csrf(client), "task": "", "args": "[]", "kwargs": "{}", "host": "web-3"}
    answer = client.post("/send", data=data | {"command": "./rotate-logs.sh"})
    assert answer.status_code == 303, _field_errors(answer.text)
    job = demo.store.get_job(answer.headers["location"].removeprefix("/jobs/"))
    assert job is not None and job.host == "web-3"
    assert "web-3" in client.get(f"/jobs/{job.id}").text

    form = SCHEDULE_FORM | {"task": "", "command": "./backup.sh", "host": "db-1"}
    answer = client.post("/schedules/new", data=form | {"csrf": _csrf(client, "/schedules/new")})
    assert answer.status_code == 303, _field_errors(answer.text)
    [stored] = demo.store.schedules()
    assert stored.job_options["host"] == "db-1"
    page = client.get(f"/schedules/{stored.name}/edit")
    assert 'name="host" value="db-1"' in page.text

    edit = f"/schedules/{stored.name}/edit"
    answer = client.post(edit, data=form | {"priority": "4", "csrf": _csrf(client, edit)})
    assert answer.status_code == 303, _field_errors(answer.text)
    [stored] = demo.store.schedules()
    assert (stored.job_options["priority"], stored.job_options["host"]) == (4, "db-1")
    answer = client.post(
        edit, data=form | {"priority": "4", "host": "", "csrf": _csrf(client, edit)}
    )
    assert answer.status_code == 303, _field_errors(answer.text)
    [stored] = demo.store.schedules()
    assert stored.job_options["host"] is None, "a Host left blank: any host"


def test_schedule_form_keeps_a_command_schedule_as_a_line(client: TestClient, demo: Demo) -> None:
    data = SCHEDULE_FORM | {"task": "", "command": "sh -c 'echo $HOME'"}
    answer = client.post("/schedules/new", data=data | {"csrf": _csrf(client, "/schedules/new")})
    assert answer.status_code == 303, _field_errors(answer.text)
    [stored] = demo.store.schedules()
    assert (stored.task, json.loads(stored.payload)["args"]) == (
        "rota.cmd",
        [["sh", "-c", "echo $HOME"]],
    )
    page = client.get("/schedules/nightly/edit")
    assert 'name="command" value="sh -c &#39;echo $HOME&#39;"' in page.text
    values = dict(re.findall(r'<input name="(\w+)" value="([^"]*)"', page.text))
    form = SCHEDULE_FORM | {k: html.unescape(v) for k, v in values.items()}
    form |= {"task": "rota.cmd", "args": "[]", "csrf": csrf_of(page.text)}
    assert client.post("/schedules/nightly/edit", data=form).status_code == 303
    assert _flashes(client, "/schedules") == ["Schedule nightly is unchanged."]
    changed = client.post("/schedules/nightly/edit", data=form | {"command": "true"})
    assert changed.status_code == 303
    assert json.loads(demo.store.schedules()[0].payload)["args"] == [["true"]]


def test_api_send_a_job(client: TestClient, demo: Demo) -> None:
    answer = client.post(
        "/api/jobs",
        json={"task": "math.add", "args": [2, 3], "options": {"priority": 7}, "delay": 60},
    )
    assert answer.status_code == 201, answer.text
    body = answer.json()
    assert body["message"] == f"sent job {body['job_id']}" and body["duplicate"] is False
    job = demo.store.get_job(body["job_id"])
    assert job is not None and (job.args, job.priority, job.state.value) == (
        [2, 3],
        7,
        "scheduled",
    )


@pytest.mark.parametrize(
    ("body", "status", "code", "message"),
    [
        (b'{"task": "math.add", "args": [NaN]}', 400, "serialization_error", "args[0] is nan"),
        (b'{"task": "nope"}', 404, "unknown_task", "unknown task 'nope'"),
        (
            b'{"task": "math.add", "kwargs": [1]}',
            400,
            "invalid_argument",
            "kwargs must be a JSON object, not an array",
        ),
        (
            b'{"task": "math.add", "args": {"a": 1}}',
            400,
            "invalid_argument",
            "args must be a JSON array, not an object",
        ),
        (
            b'{"task": "math.add", "options": [1]}',
            400,
            "invalid_argument",
            "options must be a JSON object, not an array",
        ),
        (
            b'{"task": "math.add", "options": {"priority": true}}',
            400,
            "invalid_argument",
            "not True",
        ),
        (b'{"task": "math.add", "options": {"colour": 1}}', 400, "invalid_argument", "colour"),
        (b'{"task": "math.add", "delay": -5}', 400, "invalid_argument", "delay"),
        (b'{"task": "math.add", "extra": 1}', 422, "invalid_request", "extra"),
    ],
)
def test_api_send_refuses_bad_input(
    client: TestClient, demo: Demo, body: bytes, status: int, code: str, message: str
) -> None:
    answer = client.post("/api/jobs", content=body, headers={"content-type": "application/json"})
    assert expect_error(answer, status, message)["error"] == code
    assert _jobs(demo) == []


def test_form_and_api_give_the_same_message(client: TestClient) -> None:
    bad = {"task": "math.add", "args": [1], "options": {"priority": "high"}}
    api = client.post("/api/jobs", json=bad).json()["detail"]
    data = {"csrf": _csrf(client), "task": "math.add", "args": "[1]", "priority": "high"}
    form = _field_errors(client.post("/send", data=data).text)["priority"]
    assert api == form == "priority must be an integer, not 'high'"


# -- schedules -----------------------------------------------------------------------


def test_schedule_form_creates_a_schedule(client: TestClient, demo: Demo) -> None:
    page = client.get("/schedules/new", params={"task": "math.add"})
    assert page.status_code == 200
    assert len(re.findall(r'<li><time datetime="', page.text)) == 3  # preview of every 60 s
    data = SCHEDULE_FORM | {"csrf": csrf_of(page.text), "grace": "90s", "priority": "4"}
    answer = client.post("/schedules/new", data=data)
    assert answer.status_code == 303 and answer.headers["location"] == "/schedules"
    [stored] = demo.store.schedules()
    assert (stored.name, stored.task, stored.trigger["type"], stored.trigger["interval"]) == (
        "nightly",
        "math.add",
        "every",
        30.0,
    )
    assert (stored.grace, stored.enabled, stored.job_options["priority"]) == (90.0, True, 4)
    assert stored.next_fire is not None and stored.next_fire % 30 == 0
    assert _flashes(client, "/schedules") == ["Schedule nightly created."]
    assert 'href="/schedules/nightly/edit"' in client.get("/schedules").text


def test_schedule_form_cron_with_a_time_zone_previews_three_fires(client: TestClient) -> None:
    data = SCHEDULE_FORM | {"kind": "cron", "cron": "0 12 * * *", "tz": "Asia/Shanghai"}
    answer = client.post("/schedules/new", data=data | {"csrf": _csrf(client), "intent": "preview"})
    assert answer.status_code == 200
    fires = re.findall(r'<li><time datetime="([^"]+)"', answer.text)
    assert len(fires) == 3 and all(t.endswith("T04:00:00+00:00") for t in fires)  # noon +08:00


def test_schedule_form_reads_an_at_time_without_offset_in_its_time_zone(
    client: TestClient,
) -> None:
    data = SCHEDULE_FORM | {"kind": "at", "at": "2030-01-31T09:00", "tz": "Asia/Shanghai"}
    answer = client.post("/schedules/new", data=data | {"csrf": _csrf(client), "intent": "preview"})
    assert re.findall(r'<li><time datetime="([^"]+)"', answer.text) == ["2030-01-31T01:00:00+00:00"]


BAD_SCHEDULES = [
    ({"kind": "cron", "cron": "61 * * * *"}, "cron", "cron field 'minute' has invalid value '61'"),
    ({"kind": "cron", "cron": "* * *"}, "cron", "cron expression '* * *' has 3 fields; expected 5"),
    ({"kind": "cron", "cron": "0 * * * *", "tz": "Mars/Base"}, "tz", "time zone 'Mars/Base'"),
    ({"kind": "every", "interval": "0"}, "interval", "interval must be"),
    ({"kind": "every", "tz": "Europe/Paris"}, "tz", "an every trigger counts seconds"),
    ({"kind": "at", "at": "2030-01-31T09:00", "tz": "Nowhere/X"}, "tz", "'Nowhere/X'"),
    ({"kind": "at", "at": "tomorrow"}, "at", "at time 'tomorrow' is not a date and time"),
    ({"kind": "weekly"}, "kind", "trigger kind must be every, cron or at, not 'weekly'"),
    ({"args": "[NaN]"}, "args", "args: NaN is not JSON"),
    ({"kwargs": "{"}, "kwargs", "kwargs: not valid JSON"),
    ({"task": "nope"}, "task", "unknown task 'nope'"),
    ({"name": ""}, "name", "schedule name must be a non-empty string"),
    ({"name": "new"}, "name", "schedule name 'new' is taken by the dashboard's form"),
    ({"misfire": "later"}, "misfire", "misfire must be 'coalesce' or 'all', not 'later'"),
    ({"overlap": "maybe"}, "overlap", "overlap must be 'allow', 'skip' or 'queue', not 'maybe'"),
    ({"jitter": "lots"}, "jitter", "jitter 'lots' is not a duration"),
]


@pytest.mark.parametrize(("change", "field", "message"), BAD_SCHEDULES)
def test_schedule_form_refuses_bad_input_beside_its_field(
    client: TestClient, demo: Demo, change: dict[str, str], field: str, message: str
) -> None:
    data = SCHEDULE_FORM | change | {"csrf": _csrf(client, "/schedules/new")}
    answer = client.post("/schedules/new", data=data)
    assert answer.status_code == 400
    errors = _field_errors(answer.text)
    assert list(errors) == [field], errors
    assert message in errors[field]
    assert demo.store.schedules() == []


def test_schedule_form_refuses_every_field_it_cannot_read_at_once(
    client: TestClient, demo: Demo
) -> None:
    bad = {"kind": "cron", "cron": "* * *", "args": "[NaN]", "kwargs": "{"}
    data = SCHEDULE_FORM | bad | {"csrf": _csrf(client, "/schedules/new")}
    answer = client.post("/schedules/new", data=data)
    assert answer.status_code == 400
    errors = _field_errors(answer.text)
    assert sorted(errors) == ["args", "cron", "kwargs"], errors
    assert "has 3 fields" in errors["cron"]
    assert demo.store.schedules() == []


def test_send_form_refuses_arguments_and_keywords_at_once(client: TestClient, demo: Demo) -> None:
    data = {"task": "add", "args": "[1,", "kwargs": "{", "csrf": _csrf(client)}
    answer = client.post("/send", data=data)
    assert answer.status_code == 400
    assert sorted(_field_errors(answer.text)) == ["args", "kwargs"]
    assert _jobs(demo) == []


def test_the_new_schedule_form_does_not_replace_one_of_the_same_name(
    client: TestClient, demo: Demo
) -> None:
    demo.app.admin.add_schedule("nightly", "math.add", every(3600), args=[1, 2])
    before = demo.store.get_schedule("nightly")
    data = SCHEDULE_FORM | {"name": "nightly", "csrf": _csrf(client, "/schedules/new")}
    answer = client.post("/schedules/new", data=data)
    assert answer.status_code == 400
    assert _field_errors(answer.text) == {
        "name": "a schedule named 'nightly' exists: edit it, or pick another name"
    }
    assert demo.store.get_schedule("nightly") == before


def test_schedule_edit_form_changes_only_what_changed(client: TestClient, demo: Demo) -> None:
    demo.app.admin.add_schedule(
        "report", "math.add", every(3600), args=[1, 2], options={"queue": "reports"}
    )
    page = client.get("/schedules/report/edit")
    assert page.status_code == 200
    assert 'name="interval" value="3600"' in page.text
    assert 'name="queue" value="reports"' in page.text
    values = dict(re.findall(r'<input name="(\w+)" value="([^"]*)"', page.text))
    form = SCHEDULE_FORM | values | {"name": "report", "args": "[1, 2]", "csrf": csrf_of(page.text)}

    answer = client.post("/schedules/report/edit", data=form | {"interval": "15m", "enabled": ""})
    assert answer.status_code == 303
    [stored] = demo.store.schedules()
    assert stored.trigger["interval"] == 900.0 and stored.enabled is False
    assert stored.job_options["queue"] == "reports"  # untouched options stay
    assert _flashes(client, "/schedules") == ["Schedule report saved (enabled, trigger changed)."]

    bad = client.post("/schedules/report/edit", data=form | {"kind": "cron", "cron": "x"})
    assert bad.status_code == 400 and "cron" in _field_errors(bad.text)
    assert demo.store.schedules() == [stored]


def test_schedule_edit_of_an_unknown_schedule_is_404(client: TestClient) -> None:
    assert client.get("/schedules/ghost/edit").status_code == 404


def test_api_create_and_patch_a_schedule(client: TestClient, demo: Demo) -> None:
    created = client.post(
        "/api/schedules",
        json={
            "name": "tick",
            "task": "crawl.fetch",
            "trigger": {"type": "cron", "expr": "*/5 * * * *", "tz": "UTC"},
            "args": ["/home"],
            "overlap": "skip",
        },
    )
    assert created.status_code == 201, created.text
    assert created.json()["name"] == "tick" and created.json()["next_fire"] % 300 == 0
    patched = client.patch("/api/schedules/tick", json={"enabled": False, "jitter": 5})
    assert patched.status_code == 200, patched.text
    [stored] = demo.store.schedules()
    assert (stored.overlap, stored.enabled, stored.jitter) == ("skip", False, 5.0)
    assert stored.trigger["expr"] == "*/5 * * * *"


def test_api_patch_with_no_field_leaves_the_schedule_unchanged_and_unaudited(
    client: TestClient, demo: Demo
) -> None:
    demo.app.admin.add_schedule("tick", "math.add", every(60), args=[1, 2])
    before, audited = demo.store.schedules(), demo.store.audit()[0]
    answer = client.patch("/api/schedules/tick", json={})
    assert answer.status_code == 200, answer.text
    [stored] = before
    assert answer.json() == {
        "ok": True,
        "message": "schedule 'tick' is unchanged",
        "name": "tick",
        "next_fire": stored.next_fire,
        "enabled": True,
    }
    assert demo.store.schedules() == before
    assert demo.store.audit()[0] == audited, "as the form saved unchanged: nothing audited"
    expect_error(client.patch("/api/schedules/ghost", json={}), 404, "schedule 'ghost' not found")
    expect_error(client.patch("/api/schedules/%20tick", json={}), 400, "surrounding spaces")


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "message"),
    [
        (
            "post",
            "/api/schedules",
            {"name": "x", "task": "math.add", "trigger": {"type": "cron", "expr": "61 * * * *"}},
            400,
            "cron field 'minute' has invalid value '61'",
        ),
        (
            "post",
            "/api/schedules",
            {"name": "x", "task": "nope", "trigger": {"type": "every", "interval": 5}},
            404,
            "unknown task 'nope'",
        ),
        (
            "post",
            "/api/schedules",
            {
                "name": "x",
                "task": "math.add",
                "trigger": {"type": "every", "interval": 5},
                "args": [float("inf")],
            },
            400,
            "not JSON",
        ),
        (
            "post",
            "/api/schedules",
            {"name": "x", "task": "math.add", "trigger": "*/5 * * * *"},
            400,
            "schedule 'x': trigger must be a JSON object such as"
            ' {"type": "every", "interval": 60}, not the string "*/5 * * * *"',
        ),
        (
            "patch",
            "/api/schedules/base",
            {"enabled": "yes"},
            400,
            "schedule 'base': enabled must be true, false or null, not the string \"yes\"",
        ),
        (
            "patch",
            "/api/schedules/base",
            {"enabled": 1},
            400,
            "enabled must be true, false or null, not the number 1",
        ),
        (
            "patch",
            "/api/schedules/base",
            {"args": {"a": 1}},
            400,
            "schedule 'base': args must be a JSON array, not an object",
        ),
        (
            "patch",
            "/api/schedules/base",
            {"kwargs": [1]},
            400,
            "schedule 'base': kwargs must be a JSON object, not an array",
        ),
        ("patch", "/api/schedules/ghost", {"jitter": 1}, 404, "schedule 'ghost' not found"),
        ("patch", "/api/schedules/ghost", {"enabled": "yes"}, 404, "schedule 'ghost' not found"),
        ("patch", "/api/schedules/base", {"colour": 1}, 422, "colour"),
    ],
)
def test_api_schedule_refuses_bad_input(
    client: TestClient,
    demo: Demo,
    method: str,
    path: str,
    body: dict[str, Any],
    status: int,
    message: str,
) -> None:
    demo.app.admin.add_schedule("base", "math.add", every(60), args=[1, 2])
    before = demo.store.schedules()
    send: Callable[..., Any] = getattr(client, method)
    content = re.sub(r"\binf\b", "Infinity", repr(body).replace("'", '"'))
    answer = send(path, content=content, headers={"content-type": "application/json"})
    expect_error(answer, status, message)
    assert demo.store.schedules() == before


# -- queue modes -----------------------------------------------------------------------


def test_queue_mode_selector_sets_the_mode(client: TestClient, demo: Demo) -> None:
    demo.fetch.send("/a")
    page = client.get("/queues")
    assert re.search(
        r'action="/queues/crawl/mode".*?<option value="running" selected>', page.text, re.S
    )
    answer = client.post("/queues/crawl/mode", data={"csrf": csrf_of(page.text), "mode": "debug"})
    assert answer.status_code == 303
    assert {q.name: q.mode for q in demo.store.queues()} == {"crawl": "debug"}
    assert _flashes(client, "/queues") == ["Queue crawl set to debug."]
    assert '<option value="debug" selected>' in client.get("/queues").text

    bad = client.post("/queues/crawl/mode", data={"csrf": csrf_of(page.text), "mode": "fast"})
    assert bad.status_code == 303
    assert _flashes(client, "/queues") == [
        "queue mode must be one of running, paused, debug, not 'fast'"
    ]
    assert {q.name: q.mode for q in demo.store.queues()} == {"crawl": "debug"}


# -- who may ---------------------------------------------------------------------------


def test_viewer_sees_no_forms_and_gets_403(secured: Callable[[], TestClient], demo: Demo) -> None:
    demo.app.admin.add_schedule("s", "math.add", every(60), args=[1, 2])
    demo.fetch.send("/a")
    viewer = secured()
    csrf = login(viewer, VIEWER)
    for path in ("/", "/schedules", "/queues"):
        text = viewer.get(path).text
        assert 'href="/send"' not in text and "/schedules/new" not in text
        assert "/edit" not in text and "/mode" not in text
    for path in ("/send", "/schedules/new", "/schedules/s/edit"):
        assert viewer.get(path).status_code == 403
    forms = {
        "/send": {"task": "math.add", "args": "[1, 2]"},
        "/schedules/new": SCHEDULE_FORM,
        "/schedules/s/edit": SCHEDULE_FORM | {"interval": "5"},
        "/queues/crawl/mode": {"mode": "paused"},
    }
    for path, data in forms.items():
        assert viewer.post(path, data=data | {"csrf": csrf}).status_code == 403, path
    api = secured()
    for method, path, body in [
        ("post", "/api/jobs", {"task": "math.add", "args": [1, 2]}),
        (
            "post",
            "/api/schedules",
            {"name": "t", "task": "math.add", "trigger": {"type": "every", "interval": 5}},
        ),
        ("patch", "/api/schedules/s", {"jitter": 1}),
        ("post", "/api/queues/crawl/mode", {"mode": "paused"}),
    ]:
        expect_error(getattr(api, method)(path, json=body, headers=bearer(VIEWER)), 403)
    assert len(_jobs(demo)) == 1
    assert [(s.name, s.trigger["interval"]) for s in demo.store.schedules()] == [("s", 60.0)]
    assert [q.mode for q in demo.store.queues()] == ["running"]


def test_operator_forms_need_the_csrf_token(secured: Callable[[], TestClient], demo: Demo) -> None:
    operator = secured()
    login(operator, OPERATOR)
    assert operator.get("/send").status_code == 200
    answer = operator.post("/send", data={"task": "math.add", "args": "[1, 2]"})
    assert answer.status_code == 403
    assert _jobs(demo) == []


def test_form_api_is_in_the_schema_and_the_pages_are_not(client: TestClient) -> None:
    paths = client.get("/api/openapi.json").json()["paths"]
    assert "post" in paths["/api/jobs"] and "post" in paths["/api/schedules"]
    assert "patch" in paths["/api/schedules/{name}"]
    assert not {"/send", "/schedules/new", "/schedules/{name}/edit"} & set(paths)
