"""app.admin on a real SQLite store: validation, roles, and one audit entry per action."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import rota
from rota.admin import Actor, Admin
from rota.errors import (
    Conflict,
    Forbidden,
    InvalidArgument,
    InvalidSchedule,
    JobNotFound,
    NotFound,
    SerializationError,
    UnknownTask,
)
from rota.models import AuditEntry, JobState, Outcome
from rota.scheduling import every

ANN = Actor(name="ann", role="operator", origin="api", address="10.1.2.3")
VIEWER = Actor(name="vic", role="viewer", origin="web", address="10.9.9.9")


@pytest.fixture
def app(tmp_path: Path) -> Iterator[rota.App]:
    app = rota.App(f"sqlite:///{tmp_path / 'rota.db'}")

    @app.task(name="add", queue="math")
    def add(a: int, b: int) -> int:
        return a + b

    yield app
    app.close()


def log(app: rota.App) -> list[AuditEntry]:
    return app.store.audit(limit=1000)[0]


def last(app: rota.App) -> AuditEntry:
    return log(app)[0]


def fail_one(app: rota.App, queue: str = "math") -> str:
    [job] = app.store.claim("w", [queue], 1)
    assert app.store.finish([Outcome(job.id, job.token, ok=False, error="boom")]) == [True]
    return job.id


def test_queue_actions_apply_and_are_audited_with_the_actor(app: rota.App) -> None:
    app.admin.pause_queue("math", by=ANN)
    assert [q.paused for q in app.store.queues() if q.name == "math"] == [True]
    entry = last(app)
    assert (entry.actor, entry.role, entry.origin, entry.address) == (
        "ann",
        "operator",
        "api",
        "10.1.2.3",
    )
    assert (entry.action, entry.target) == ("queue.pause", "math")
    app.admin.resume_queue("math")
    assert not any(q.paused for q in app.store.queues())
    assert (last(app).action, last(app).actor, last(app).origin) == (
        "queue.resume",
        "python",
        "python",
    )

    app.get_task("add").send(1, 2)
    app.get_task("add").send(3, 4)
    assert app.admin.purge_queue("math", by=ANN) == 2
    assert (last(app).action, last(app).details) == ("queue.purge", {"count": 2})
    with pytest.raises(NotFound):
        app.admin.purge_queue("nowhere")
    assert len(log(app)) == 3


def test_resuming_a_queue_the_store_does_not_know_is_not_found(app: rota.App) -> None:
    for resume in (
        lambda: app.admin.resume_queue("nosuch"),
        lambda: app.admin.set_queue_mode("nosuch", "running"),
    ):
        with pytest.raises(NotFound, match="queue 'nosuch' not found"):
            resume()
    assert log(app) == [] and app.store.queues() == []
    app.admin.set_queue_mode("later", "debug")  # ahead of its first job, as a pause
    app.admin.set_queue_mode("later", "running")
    assert [e.action for e in log(app)] == ["queue.mode", "queue.mode"]


def test_set_queue_mode_checks_the_mode(app: rota.App) -> None:
    with pytest.raises(InvalidArgument, match="running, paused, debug"):
        app.admin.set_queue_mode("math", "sleepy")
    with pytest.raises(InvalidArgument):
        app.admin.set_queue_mode("", "paused")
    assert log(app) == []


def test_job_actions_take_prefixes_and_refuse_the_wrong_state(app: rota.App) -> None:
    handle = app.get_task("add").send(1, 2)
    with pytest.raises(Conflict, match="only failed or cancelled"):
        app.admin.retry_job(handle.id)
    assert app.admin.cancel_job(handle.id[:8], by=ANN) == handle.id
    assert (last(app).action, last(app).target) == ("job.cancel", handle.id)
    assert app.admin.retry_job(handle.id[:8]) == handle.id
    assert handle.status() == "queued"
    assert last(app).action == "job.retry"
    failed = fail_one(app)
    assert app.admin.retry_failed(queue="math", by=ANN) == 1
    assert (last(app).action, last(app).target, last(app).details) == (
        "job.retry_failed",
        "queue=math",
        {"count": 1},
    )
    app.store.claim("w", ["math"], 1)
    with pytest.raises(Conflict, match="running job cannot be deleted"):
        app.admin.delete_job(failed)
    with pytest.raises(JobNotFound):
        app.admin.delete_job("nosuchjob")
    with pytest.raises(InvalidArgument):
        app.admin.retry_failed(queue="")
    assert [e.action for e in log(app)] == ["job.retry_failed", "job.retry", "job.cancel"]


def test_retry_of_a_job_whose_unique_key_another_job_holds_is_a_conflict(
    app: rota.App,
) -> None:
    fetch = app.task(name="fetch", queue="math", unique=lambda url: url)(lambda url: None)
    old = fetch.send("https://example.com/")
    fail_one(app)
    app.admin.pause_queue("math")
    pending = fetch.send("https://example.com/")
    assert not pending.duplicate
    with pytest.raises(Conflict, match=r"a job with the same unique key .* is pending"):
        app.admin.retry_job(old.id)
    assert (old.status(), pending.status()) == ("failed", "queued")
    assert app.admin.retry_failed() == 0
    assert last(app).action == "job.retry_failed"
    app.admin.delete_job(pending.id)
    assert app.admin.retry_job(old.id) == old.id
    again = fetch.send("https://example.com/")
    assert (again.duplicate, again.id) == (True, old.id)


def test_limits_are_validated_in_one_place(app: rota.App) -> None:
    for bad in (True, -1, 1_000_001, 2.5, "3"):
        with pytest.raises(InvalidArgument):
            app.admin.set_limit("spiders", bad)  # type: ignore[arg-type]
        with pytest.raises(InvalidArgument):
            app.limits.set("spiders", bad)  # type: ignore[arg-type]
    assert log(app) == []
    app.limits.set("spiders", 4)
    assert [(i.key, i.override) for i in app.store.limits()] == [("spiders", 4)]
    assert (last(app).action, last(app).target, last(app).details) == (
        "limit.set",
        "spiders",
        {"limit": 4},
    )
    app.admin.clear_limit("spiders", by=ANN)
    assert last(app).action == "limit.clear"
    assert app.admin.reset_breaker("spiders") is False
    assert app.limits.reset_breaker("spiders") is False
    assert last(app).action == "limit.clear", "a breaker that was not open: nothing recorded"


def test_clearing_the_limit_of_an_unknown_key_is_not_found_and_changes_nothing(
    app: rota.App,
) -> None:
    for clear in (
        lambda: app.admin.clear_limit("nope"),
        lambda: app.admin.set_limit("nope", None),
        lambda: app.admin.set_rate("nope", None),
        lambda: app.limits.clear("nope"),
        lambda: app.admin.reset_breaker("nope"),
        lambda: app.limits.reset_breaker("nope"),
    ):
        with pytest.raises(NotFound, match="limit key 'nope' not found"):
            clear()
    assert app.store.limits() == []
    assert log(app) == []
    app.limits.set("spiders", 2)
    app.admin.clear_limit("spiders")
    app.admin.clear_limit("spiders")  # no override left: nothing to do, and fine
    assert [e.action for e in log(app)] == [
        "limit.clear",
        "limit.clear",
        "limit.set",
    ]  # newest first


def test_add_schedule_replaces_the_paused_state_only_when_told(app: rota.App) -> None:
    add = app.admin.add_schedule
    assert not add("s", "add", every(60), args=[1, 2], enabled=False).enabled
    assert not add("s", "add", every(60), args=[1, 2]).enabled, "a replace keeps a pause"
    assert add("s", "add", every(30), args=[1, 2], enabled=True).enabled
    assert add("s", "add", every(30), args=[1, 2]).enabled
    assert not add("s", "add", every(30), args=[1, 2], enabled=False).enabled
    assert app.admin.update_schedule("s", enabled=True).enabled
    assert [x.enabled for x in app.store.schedules()] == [True]


def test_schedules_from_json_triggers_with_task_options(app: rota.App) -> None:
    trigger = {"type": "every", "interval": 60}
    s = app.admin.add_schedule(
        "sums", "add", trigger, args=[1, 2], options={"queue": "nightly", "retries": 2}, by=ANN
    )
    assert (s.task, s.job_options["queue"], s.job_options["max_attempts"]) == ("add", "nightly", 3)
    assert (last(app).action, last(app).target) == ("schedule.add", "sums")

    s = app.admin.update_schedule("sums", kwargs={"b": 5}, args=[1], by=ANN)
    assert s.job_options["queue"] == "nightly", "options not named keep their stored values"
    assert (last(app).action, last(app).details) == (
        "schedule.update",
        {"changed": ["args", "kwargs"]},
    )
    s = app.admin.update_schedule("sums", options={"priority": 5})
    assert (s.job_options["queue"], s.job_options["priority"]) == ("nightly", 5)
    assert s.job_options["max_attempts"] == 3, "options not named in the change are kept"
    s = app.admin.add_schedule(
        "hosted", "add", every(60), args=[1, 2], options={"host": "db-1", "backoff": ["30s", "1h"]}
    )
    s = app.admin.update_schedule("hosted", options={"priority": 2})
    assert (s.job_options["priority"], s.job_options["host"]) == (2, "db-1")
    assert json.loads(s.job_options["retry"]) == {"backoff": [30.0, 3600.0]}
    app.admin.remove_schedule("hosted")
    s = app.admin.update_schedule("sums", trigger=every(30), enabled=False)
    assert (s.enabled, s.trigger["interval"]) == (False, 30)
    app.admin.resume_schedule("sums")
    app.admin.pause_schedule("sums")
    assert [x.enabled for x in app.store.schedules()] == [False]

    job_id = app.admin.run_schedule_now("sums", by=ANN)
    assert len(job_id) == 32 and int(job_id, 16) >= 0
    ran = app.store.get_schedule("sums")
    assert ran is not None and ran.last_job_id == job_id, "the overlap rule of later fires sees it"
    job = app.store.get_job(job_id)
    assert job is not None and (job.queue, job.schedule, job.kwargs) == (
        "nightly",
        "sums",
        {"b": 5},
    )
    assert (last(app).action, last(app).details) == (
        "schedule.run",
        {"job": job_id, "duplicate": False},
    )
    app.admin.remove_schedule("sums")
    assert app.store.schedules() == []
    assert [e.action for e in log(app)][:5] == [
        "schedule.remove",
        "schedule.run",
        "schedule.pause",
        "schedule.resume",
        "schedule.update",
    ]


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda a: a.add_schedule("s", "nope", {"type": "every", "interval": 5}), UnknownTask),
        (lambda a: a.add_schedule("s", "add", {"type": "weekly"}), InvalidSchedule),
        (lambda a: a.add_schedule("", "add", every(5)), InvalidArgument),
        (lambda a: a.add_schedule("s", "add", every(5), misfire="never"), InvalidSchedule),
        (lambda a: a.add_schedule("s", "add", every(5), options={"queue": ""}), InvalidArgument),
        (lambda a: a.add_schedule("s", "add", every(5), args=[{1, 2}]), SerializationError),
        (lambda a: a.update_schedule("missing", args=[1]), NotFound),
        (lambda a: a.update_schedule("missing", colour="red"), InvalidArgument),
        (lambda a: a.pause_schedule("missing"), NotFound),
        (lambda a: a.remove_schedule("missing"), NotFound),
        (lambda a: a.run_schedule_now("missing"), NotFound),
    ],
)
def test_bad_schedule_input_changes_nothing(
    app: rota.App, call: Callable[[Admin], object], error: type[Exception]
) -> None:
    with pytest.raises(error):
        call(app.admin)
    assert app.store.schedules() == [] and log(app) == []


def test_send_by_task_name_validates_like_task_send(app: rota.App) -> None:
    handle = app.admin.send("add", [1], {"b": 2}, options={"priority": 5}, delay="1h", by=ANN)
    job = handle.job()
    assert (job.args, job.kwargs, job.priority, job.state) == ([1], {"b": 2}, 5, JobState.SCHEDULED)
    assert (last(app).action, last(app).target, last(app).details["task"]) == (
        "job.send",
        handle.id,
        "add",
    )
    calls: list[tuple[Callable[[], object], type[Exception]]] = [
        (lambda: app.admin.send("nope"), UnknownTask),
        (lambda: app.admin.send("add", [float("nan")]), SerializationError),
        (lambda: app.admin.send("add", "12"), InvalidArgument),  # type: ignore[arg-type]
        (lambda: app.admin.send("add", options={"priority": True}), InvalidArgument),
        (lambda: app.admin.send("add", delay=-1), InvalidArgument),
    ]
    for call, error in calls:
        with pytest.raises(error):
            call()
    assert len(log(app)) == 1 and len(app.store.list_jobs(rota.models.JobQuery()).jobs) == 1


def test_a_command_line_sent_is_in_its_audit_entry(app: rota.App) -> None:
    """Any app sends one (only workers that run command lines have rota.cmd)."""
    handle = app.admin.send("rota.cmd", [["echo", "hi there"]], by=ANN)
    assert "rota.cmd" not in app.tasks
    entry = last(app)
    assert (entry.action, entry.target, entry.details["task"]) == (
        "job.send",
        handle.id,
        "rota.cmd",
    )
    assert entry.details["command"] == "echo 'hi there'"
    app.admin.send("add", [1, 2], by=ANN)
    assert "command" not in last(app).details


def test_a_viewer_may_read_the_audit_log_but_not_act(app: rota.App) -> None:
    handle = app.get_task("add").send(1, 2)
    app.admin.add_schedule("s", "add", every(5), args=[1, 2])
    actions: list[Callable[[], object]] = [
        lambda: app.admin.pause_queue("math", by=VIEWER),
        lambda: app.admin.set_queue_mode("math", "debug", by=VIEWER),
        lambda: app.admin.purge_queue("math", by=VIEWER),
        lambda: app.admin.cancel_job(handle.id, by=VIEWER),
        lambda: app.admin.retry_failed(queue="math", by=VIEWER),
        lambda: app.admin.set_limit("k", 1, by=VIEWER),
        lambda: app.admin.reset_breaker("k", by=VIEWER),
        lambda: app.admin.add_schedule("t", "add", every(5), by=VIEWER),
        lambda: app.admin.remove_schedule("s", by=VIEWER),
        lambda: app.admin.run_schedule_now("s", by=VIEWER),
        lambda: app.admin.send("add", [1, 2], by=VIEWER),
    ]
    before = log(app)
    for action in actions:
        with pytest.raises(Forbidden, match="vic is viewer; this needs the operator role"):
            action()
    assert log(app) == before
    assert handle.status() == "queued" and [q.paused for q in app.store.queues()] == [False]
    assert app.admin.audit(by=VIEWER)[0] == before


def test_a_malformed_actor_is_refused(app: rota.App) -> None:
    for actor in (
        Actor(role="root"),
        Actor(origin="email"),
        Actor(name=""),
        Actor(address=" 1.2.3.4"),
        "admin",
    ):
        with pytest.raises(InvalidArgument):
            app.admin.pause_queue("math", by=actor)  # type: ignore[arg-type]
    assert log(app) == [] and app.store.queues() == []
