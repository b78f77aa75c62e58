"""define_schedule: validation with precise errors, what is stored, and upsert by name."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from rota import (
    App,
    Breaker,
    InvalidArgument,
    InvalidSchedule,
    Limit,
    PayloadTooLarge,
    Rate,
    Registry,
    SerializationError,
    UnknownTask,
    at,
    cron,
    every,
)
from rota.models import Schedule
from rota.scheduling.define import define_schedule, job_options, schedule_job
from rota.stores import Store


@pytest.fixture
def app(tmp_path: Path) -> Iterator[App]:
    app = App(f"sqlite:///{tmp_path / 'rota.db'}", lease=45)

    @app.task(name="refresh")
    def refresh(site: str, depth: int = 1) -> None:
        """Refresh one site."""

    @app.task(
        name="crawl",
        queue="crawl",
        priority=3,
        retries=4,
        backoff=(2, 60),
        no_retry_on=ValueError,
        timeout=60,
        lease=20,
        max_lost=2,
        concurrency=Limit("spiders", 4),
        rate=Rate("2/s", burst=5, key=lambda url: url.split("/")[2]),
        breaker=Breaker(key="crawl-breaker", failures=3, cooldown=30),
        unique=True,
        unique_for=300,
    )
    def crawl(url: str) -> None:
        """Fetch one page."""

    yield app
    app.close()


def only(store: Store) -> Schedule:
    found = store.schedules()
    assert len(found) == 1, found
    return found[0]


# -- what is stored -------------------------------------------------------------


def test_a_schedule_stores_the_task_trigger_arguments_and_next_fire(app: App) -> None:
    before = app.store.now()
    stored = app.schedule(
        "refresh-home", app.tasks["refresh"], every(minutes=15), args=("home",), kwargs={"depth": 2}
    )
    assert stored == only(app.store)
    assert stored.name == "refresh-home"
    assert stored.task == "refresh"
    assert stored.trigger == {"type": "every", "interval": 900.0, "start": None, "end": None}
    assert json.loads(stored.payload) == {"args": ["home"], "kwargs": {"depth": 2}}
    assert stored.next_fire is not None
    assert stored.next_fire % 900 == 0
    assert before <= stored.next_fire < before + 900
    assert (stored.enabled, stored.misfire, stored.grace, stored.overlap, stored.jitter) == (
        True,
        "coalesce",
        None,
        "allow",
        0.0,
    )
    assert (stored.last_fire, stored.last_job_id, stored.skipped) == (None, None, 0)


def test_job_options_carry_the_tasks_options_and_resolved_keys(app: App) -> None:
    stored = app.schedule("crawl-news", "crawl", every(60), args=("https://news.example/",))
    assert stored.job_options == {
        "queue": "crawl",
        "priority": 3,
        "max_attempts": 5,
        "max_lost": 2,
        "lease": 20.0,
        "timeout": 60.0,
        "concurrency": [["spiders", 4]],
        "rate": [["news.example", 2.0, 5]],
        "breaker": [["crawl-breaker", 3, 30.0]],
        "unique_key": stored.job_options["unique_key"],
        "unique_for": 300.0,
        "host": None,
        "retry": '{"backoff":[2.0,60.0],"no_retry_on":["builtins.ValueError"]}',
    }
    assert str(stored.job_options["unique_key"]).startswith("crawl:")


def test_a_fired_job_is_the_job_send_would_make(app: App) -> None:
    crawl = app.tasks["crawl"]
    stored = app.schedule("crawl-news", crawl, every(60), args=["https://news.example/"])
    sent = crawl.new_job(("https://news.example/",), {}, job_id="j1", run_at=123.0)
    fired = schedule_job(stored, job_id="j1", fire_time=120.0, run_at=123.0)
    assert fired == replace(sent, schedule="crawl-news", fire_time=120.0)


def test_job_options_round_trip_through_schedule_job(app: App) -> None:
    job = app.tasks["crawl"].new_job(("https://a.example/x",), {}, job_id="x")
    schedule = Schedule("s", "crawl", {}, job.payload, None, job_options=job_options(job))
    assert schedule_job(schedule, job_id="x", fire_time=5.0) == replace(
        job, schedule="s", fire_time=5.0
    )


def test_a_schedule_of_a_task_sent_to_a_host_fires_jobs_for_that_host(app: App) -> None:
    crawl = app.tasks["crawl"].options(host="web-3")
    stored = app.schedule("crawl-news", crawl, every(60), args=["https://news.example/"])
    assert stored.job_options["host"] == "web-3"
    assert schedule_job(stored, job_id="j1", fire_time=120.0).host == "web-3"


def test_missing_job_options_take_the_defaults() -> None:
    schedule = Schedule("bare", "t", {"type": "at", "time": 1.0}, b"{}", 1.0)
    job = schedule_job(schedule, job_id="j", fire_time=1.0)
    assert (job.queue, job.priority, job.max_attempts, job.lease, job.concurrency) == (
        "default",
        0,
        1,
        30.0,
        (),
    )


def test_the_apps_default_lease_applies(app: App) -> None:
    assert app.schedule("r", "refresh", every(60), args=("a",)).job_options["lease"] == 45.0


def test_a_task_with_per_call_options_keeps_them(app: App) -> None:
    slow = app.tasks["refresh"].options(queue="slow", priority=-1)
    stored = app.schedule("slow-refresh", slow, every(60), args=("a",))
    assert (stored.job_options["queue"], stored.job_options["priority"]) == ("slow", -1)


def test_a_task_of_a_registry_not_yet_included_can_be_scheduled(app: App) -> None:
    library = Registry()

    @library.task(name="lib.cleanup", queue="maintenance")
    def cleanup() -> None:
        """Clean up."""

    stored = define_schedule(app, "cleanup", cleanup, cron("0 3 * * *", tz="Europe/Berlin"))
    assert (stored.task, stored.job_options["queue"]) == ("lib.cleanup", "maintenance")
    assert stored.trigger == {"type": "cron", "expr": "0 3 * * *", "tz": "Europe/Berlin"}


def test_cron_jitter_and_grace_take_durations(app: App) -> None:
    stored = app.schedule(
        "nightly",
        "refresh",
        cron("30 2 * * *", tz="Asia/Shanghai"),
        args=("all",),
        jitter="90s",  # type: ignore[arg-type]
        grace=timedelta(hours=1),  # type: ignore[arg-type]
        misfire="all",
        overlap="skip",
        enabled=False,
    )
    assert (stored.jitter, stored.grace, stored.misfire, stored.overlap, stored.enabled) == (
        90.0,
        3600.0,
        "all",
        "skip",
        False,
    )


def test_a_one_shot_in_the_past_is_still_due(app: App) -> None:
    when = datetime(2020, 1, 2, 3, 4, 5, tzinfo=UTC)
    stored = app.schedule("once", "refresh", at(when), args=("x",))
    assert stored.next_fire == when.timestamp()


def test_an_exhausted_trigger_is_stored_with_no_next_fire(app: App) -> None:
    trigger = every(60, start=datetime(2020, 1, 1), end=datetime(2020, 1, 2))
    assert app.schedule("old", "refresh", trigger, args=("x",)).next_fire is None


# -- upsert by name -------------------------------------------------------------


def test_defining_again_updates_without_duplicating_or_moving_the_next_fire(app: App) -> None:
    first = app.schedule("r", "refresh", every(3600), args=("a",))
    app.store.fire_schedule("r", first.next_fire or 0.0, 42.0, None)  # as if it fired
    second = app.schedule("r", "refresh", every(3600), args=("b",), jitter=5, overlap="skip")
    assert second == only(app.store)
    assert (second.next_fire, second.last_fire) == (42.0, first.next_fire)
    assert json.loads(second.payload)["args"] == ["b"]
    assert (second.jitter, second.overlap) == (5.0, "skip")


def test_defining_again_keeps_a_pause(app: App) -> None:
    app.schedule("r", "refresh", every(60), args=("a",))
    assert app.store.set_schedule_enabled("r", False)
    assert not app.schedule("r", "refresh", every(60), args=("a",)).enabled
    assert not app.schedule("r", "refresh", every(30), args=("a",)).enabled  # new trigger too


@pytest.mark.parametrize("trigger", [every(60), every(30)], ids=["same trigger", "new trigger"])
def test_an_explicit_enabled_wins_on_a_redefinition(app: App, trigger: Any) -> None:
    app.schedule("r", "refresh", every(60), args=("a",))
    assert not app.schedule("r", "refresh", trigger, args=("a",), enabled=False).enabled
    assert not only(app.store).enabled
    assert app.schedule("r", "refresh", every(60), args=("a",), enabled=True).enabled
    assert only(app.store).enabled


def test_a_new_schedule_is_enabled_unless_told(app: App) -> None:
    assert app.schedule("on", "refresh", every(60), args=("a",)).enabled
    assert not app.schedule("off", "refresh", every(60), args=("a",), enabled=False).enabled


def test_a_changed_trigger_restarts_from_its_first_fire(app: App) -> None:
    app.schedule("r", "refresh", every(3600), args=("a",))
    app.store.fire_schedule("r", only(app.store).next_fire or 0.0, 42.0, None)
    now = app.store.now()
    changed = app.schedule("r", "refresh", every(10), args=("a",))
    assert changed.next_fire is not None
    assert now <= changed.next_fire <= now + 10
    assert changed.trigger["interval"] == 10.0
    assert len(app.store.schedules()) == 1


def test_get_schedule_finds_by_name(app: App) -> None:
    app.schedule("a", "refresh", every(60), args=("a",))
    app.schedule("b", "refresh", every(60), args=("b",))
    found = app.store.get_schedule("b")
    assert found is not None
    assert found.name == "b"
    assert app.store.get_schedule("c") is None


# -- validation: precise errors, nothing written ----------------------------------


@pytest.mark.parametrize(
    ("changes", "error", "message"),
    [
        ({"misfire": "latest"}, InvalidSchedule, "misfire must be 'coalesce' or 'all'"),
        ({"overlap": "never"}, InvalidSchedule, "overlap must be 'allow', 'skip' or 'queue'"),
        ({"jitter": -1}, InvalidSchedule, "jitter must not be negative"),
        ({"jitter": math.nan}, InvalidSchedule, "jitter must be finite"),
        ({"jitter": "soon"}, InvalidSchedule, "jitter 'soon' is not a duration"),
        ({"grace": -0.5}, InvalidSchedule, "grace must not be negative"),
        ({"grace": math.inf}, InvalidSchedule, "grace must be finite"),
        ({"enabled": "yes"}, InvalidSchedule, "enabled must be True, False or None"),
        ({"trigger": "*/5 * * * *"}, InvalidSchedule, "trigger must be at(...), every(...)"),
        ({"task": "refesh"}, UnknownTask, "unknown task 'refesh'"),
        ({"task": 42}, InvalidSchedule, "task must be a task or a task name, not int"),
        ({"args": "home"}, InvalidArgument, "args must be a tuple or a list, not str"),
        ({"args": {"site": 1}}, InvalidArgument, "args must be a tuple or a list, not dict"),
        ({"kwargs": [("a", 1)]}, InvalidArgument, "kwargs must be a dict, not list"),
        ({"args": ()}, InvalidArgument, "task 'refresh' cannot take this call: missing a"),
        ({"kwargs": {"deep": 2}}, InvalidArgument, "cannot take this call: got an unexpected"),
        (
            {"task": "crawl", "args": ("no-host",)},
            InvalidArgument,
            "key function '<lambda>' raised IndexError",
        ),
        ({"kwargs": {1: "a"}}, InvalidArgument, "kwargs keys must be strings, not 1"),
        ({"args": (object(),)}, SerializationError, "must be JSON-serializable"),
        ({"kwargs": {"site": {1, 2}}}, SerializationError, "must be JSON-serializable"),
    ],
)
def test_bad_definitions_raise_precise_errors_and_write_nothing(
    app: App, changes: dict[str, Any], error: type[Exception], message: str
) -> None:
    call: dict[str, Any] = {"task": "refresh", "trigger": every(60), "args": ("a",)}
    call |= changes
    with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)")) as info:
        define_schedule(app, "bad", **call)
    if error is not UnknownTask:
        assert str(info.value).startswith("schedule 'bad': ")
    assert app.store.schedules() == []


@pytest.mark.parametrize("kwargs", [[], (), "", 0, [("site", "a")]])
def test_kwargs_that_are_no_mapping_are_refused_even_when_empty(app: App, kwargs: Any) -> None:
    with pytest.raises(InvalidArgument, match=r"^schedule 'bad': kwargs must be a dict, not "):
        app.schedule("bad", "refresh", every(60), args=("a",), kwargs=kwargs)
    assert app.store.schedules() == []
    assert app.schedule("good", "refresh", every(60), args=("a",), kwargs=None).name == "good"


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("", "must be a non-empty string"),
        ("   ", "must be a non-empty string"),
        (None, "must be a non-empty string"),
        ("x" * 201, "201 characters; at most 200"),
        (" padded", "surrounding spaces"),
        ("tab\there", "control characters"),
        ("new", "taken by the dashboard's form at /schedules/new"),
        ("nightly/edit", "taken by the dashboard's form at /schedules/NAME/edit"),
    ],
)
def test_bad_names_are_refused(app: App, name: Any, message: str) -> None:
    with pytest.raises(InvalidSchedule, match=message):
        app.schedule(name, "refresh", every(60), args=("a",))
    assert app.store.schedules() == []


def test_a_bad_trigger_fails_before_anything_is_written(app: App) -> None:
    with pytest.raises(InvalidSchedule, match="cron field 'minute' has invalid value '61'"):
        app.schedule("bad", "refresh", cron("61 * * * *"), args=("a",))
    assert app.store.schedules() == []


def test_oversized_arguments_are_refused(tmp_path: Path) -> None:
    small = App(f"sqlite:///{tmp_path / 'small.db'}", payload_cap=64)
    small.task(name="t")(lambda text: text)
    with pytest.raises(PayloadTooLarge, match="over the cap of 64 bytes"):
        small.schedule("big", "t", every(60), args=("x" * 100,))
    assert small.store.schedules() == []
    small.close()
