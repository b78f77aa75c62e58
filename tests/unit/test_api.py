"""The public surface: names exported, task registration and option validation."""

from __future__ import annotations

import sqlite3
from datetime import timedelta

import pytest

import rota
from rota import App, Breaker, JobState, Limit, Rate, Registry
from rota._time import parse_duration
from rota.errors import InvalidArgument, SerializationError, UnknownTask

EXPECTED_EXPORTS = {
    "App",
    "Breaker",
    "CorruptJob",
    "InvalidArgument",
    "InvalidSchedule",
    "Job",
    "JobCancelled",
    "JobContext",
    "JobFailed",
    "JobHandle",
    "JobNotFound",
    "JobState",
    "JobTimeout",
    "Limit",
    "PayloadTooLarge",
    "Rate",
    "Registry",
    "ResultTimeout",
    "RotaError",
    "SerializationError",
    "Snooze",
    "StoreError",
    "StoreUnavailable",
    "Task",
    "UnknownTask",
    "ValueRefused",
    "__version__",
    "at",
    "cron",
    "current_job",
    "errors",
    "every",
}


def test_public_names_are_pinned() -> None:
    assert set(rota.__all__) == EXPECTED_EXPORTS
    for name in rota.__all__:
        assert hasattr(rota, name), name


def test_app_does_not_connect_until_used(tmp_path: pytest.TempPathFactory) -> None:
    app = App("sqlite:////nonexistent-dir/never-created.db")
    assert app._store is None
    assert "never-created" in repr(app)


def test_app_url_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROTA_URL", "sqlite:///from-env.db")
    assert App().url == "sqlite:///from-env.db"
    monkeypatch.delenv("ROTA_URL")
    assert App().url == "sqlite:///rota.db"


def test_repr_hides_passwords() -> None:
    app = App("redis://user:s3cret@localhost:6379/0")
    assert "s3cret" not in repr(app)
    assert "***" in repr(app)


def test_task_name_is_the_qualified_name_unless_given() -> None:
    app = App()

    @app.task
    def plain() -> None: ...

    @app.task(name="custom.name", queue="q")
    def named() -> None: ...

    assert plain.name == "test_task_name_is_the_qualified_name_unless_given.<locals>.plain"
    assert named.name == "custom.name"
    assert set(app.tasks) == {plain.name, "custom.name"}
    assert app.get_task("custom.name") is named


def test_two_functions_with_one_name_are_refused() -> None:
    app = App()
    app.task(name="x")(lambda: 1)
    with pytest.raises(InvalidArgument, match="two tasks are named 'x'"):
        app.task(name="x")(lambda: 2)


def test_unknown_task_names_the_task_and_how_to_register_it() -> None:
    app = App()
    with pytest.raises(UnknownTask, match=r"unknown task 'nope'.*@app.task\(name='nope'\)"):
        app.get_task("nope")


def test_registry_tasks_join_an_app() -> None:
    registry = Registry()

    @registry.task(queue="lib")
    def helper(x: int) -> int:
        return x * 2

    with pytest.raises(InvalidArgument, match="no app has included"):
        _ = helper.app
    app = App()
    app.include(registry)
    bound = app.tasks["test_registry_tasks_join_an_app.<locals>.helper"]
    assert bound is not helper and bound.app is app
    assert (bound.fn, bound.name, bound.opts) == (helper.fn, helper.name, helper.opts)
    assert helper.app is app
    assert helper(21) == 42
    app.include(registry)  # again: nothing changes
    assert app.tasks[helper.name] is bound


def test_a_registry_in_two_apps_leaves_each_app_its_own_tasks() -> None:
    registry = Registry()

    @registry.task
    def send_email(to: str) -> None: ...

    prod, other = App("sqlite:///:memory:"), App("sqlite:///:memory:")
    prod.include(registry)
    other.include(registry)
    assert prod.get_task(send_email.name).send("b@x").app is prod
    assert prod.get_task(send_email.name).options(queue="mail").send("b@x").app is prod
    assert prod.admin.send(send_email.name, ["c@x"]).app is prod
    assert other.get_task(send_email.name).send("d@x").app is other
    assert [q.counts for q in prod.store.queues() if q.name == "default"] == [{JobState.QUEUED: 2}]
    # The declared object itself sends through the app that included it last.
    assert send_email.send("e@x").app is other
    prod.include(registry)
    assert send_email.send("f@x").app is prod


def test_tasks_declared_on_a_registry_after_an_include_join_the_app() -> None:
    registry = Registry()
    first, last = App("sqlite:///:memory:"), App("sqlite:///:memory:")
    first.include(registry)
    last.include(registry)

    @registry.task(name="late")
    def late(x: int) -> int:
        return x + 1

    for app in (first, last):
        bound = app.get_task("late")
        assert bound is not late and bound.app is app and bound.fn is late.fn
        assert app.admin.send("late", [1]).app is app
    # the declared object sends through the app that included the registry last
    assert late.send(1).app is last
    assert [q.counts for q in last.store.queues()] == [{JobState.QUEUED: 2}]
    first.include(registry)
    assert late.send(2).app is first


def test_a_late_task_whose_name_an_including_app_has_is_refused_where_declared() -> None:
    registry = Registry()
    app = App("sqlite:///:memory:")
    app.task(name="taken")(lambda: 1)
    outer = App("sqlite:///:memory:")
    outer.include(app)
    outer.task(name="also_taken")(lambda: 2)
    app.include(registry)
    for name in ("taken", "also_taken"):  # in the app that includes it, or one that includes that
        with pytest.raises(InvalidArgument, match=rf"a task named '{name}' is already registered"):
            registry.task(name=name)(lambda: 3)
        assert name not in registry.tasks
    assert app.get_task("taken")() == 1 and "also_taken" not in app.tasks


def test_tasks_declared_later_on_an_included_app_join_the_including_app() -> None:
    first = App("sqlite:///:memory:")
    second = App("sqlite:///:memory:")
    second.include(first)

    @first.task(name="later")
    def later() -> None: ...

    assert later.app is first and first.get_task("later") is later
    assert second.get_task("later").app is second


def test_including_an_app_leaves_that_apps_tasks_bound_to_it() -> None:
    first = App("sqlite:///:memory:", commands=True)

    @first.task
    def ping() -> None: ...

    second = App("sqlite:///:memory:")
    second.include(first)
    assert ping.app is first and first.get_task(ping.name) is ping
    assert second.get_task(ping.name).app is second
    command = second.get_task("rota.cmd")
    assert type(command) is type(first.get_task("rota.cmd"))  # a copy of the same kind
    assert command.app is second and first.get_task("rota.cmd").app is first


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"retries": -1}, "retries must be a non-negative integer"),
        ({"queue": ""}, "queue must be a non-empty string"),
        ({"priority": "high"}, "priority must be an integer"),
        ({"backoff": (10, 1)}, "backoff must be"),
        ({"unique_for": "forever"}, "unique_for 'forever' is not a duration"),
        ({"concurrency": 4}, "concurrency takes rota.Limit values"),
        ({"colour": "red"}, "unknown task option"),
        ({"max_lost": 0}, "max_lost must be at least 1"),
    ],
)
def test_bad_task_options_are_refused_precisely(options: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        App().task(**options)(lambda: None)


def _host(url: str) -> str:
    return url.split("/")[2]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"concurrency": [Limit("api", 1), Limit("api", 3)]},
            r"concurrency has two limits \(1 and 3\) on key 'api': give one Limit per key",
        ),
        (
            {"concurrency": [Limit(limit=1), Limit("other", 2), Limit(limit=4)]},
            r"two limits \(1 and 4\) on the task's own key \(key=None\)",
        ),
        (
            {"concurrency": [Limit(_host, 1), Limit(_host, 2)]},
            r"two limits \(1 and 2\) on the key function _host:",
        ),
        (
            {"rate": [Rate("2/s", key="api"), Rate("100/m", key="api")]},
            r"rate has two rates \('2/s' and '100/m'\) on key 'api': give one Rate per key",
        ),
        (
            {"breaker": [Breaker(3, key="api"), Breaker(5, key="api")]},
            r"breaker has two breakers \(3 failures and 5 failures\) on key 'api'",
        ),
        ({"unique_for": "7d"}, r"unique_for needs unique= \(True, a key function or a key"),
        ({"unique_for": 0, "unique": False}, "unique_for needs unique="),
        (
            {"retry_on": [ValueError, OSError], "no_retry_on": ValueError},
            r"ValueError is in both retry_on and no_retry_on",
        ),
    ],
)
def test_conflicting_or_idle_task_options_are_refused(
    options: dict[str, object], message: str
) -> None:
    app = App()
    with pytest.raises(InvalidArgument, match=message):
        app.task(**options)(lambda url="": None)

    @app.task
    def plain(url: str = "") -> None: ...

    with pytest.raises(InvalidArgument, match=message):  # per call too
        plain.options(**options)
    with pytest.raises(InvalidArgument, match=message):  # and by name (CLI, web)
        app.admin.send(plain.name, options=options)


def test_one_limit_per_key_and_uniqueness_options_that_do_apply() -> None:
    app = App("sqlite:///:memory:")

    @app.task(
        concurrency=[Limit("api", 1), Limit(_host, 2), Limit(limit=3)],
        rate=[Rate("2/s", key="api"), Rate("1/s", key=_host)],
        breaker=Breaker(3, key="api"),
        retry_on=OSError,
        no_retry_on=ConnectionError,  # a subclass excepted: not a conflict
        unique=True,
        unique_for="1h",
    )
    def fetch(url: str) -> None: ...

    job = fetch.new_job(("https://example.com/a",), {})
    assert [(c.key, c.limit) for c in job.concurrency] == [
        ("api", 1),
        ("example.com", 2),
        (fetch.name, 3),
    ]
    # Turning uniqueness off for a call turns its unique_for off with it.
    assert fetch.options(unique=False).opts.unique_for is None
    assert fetch.options(unique=None).new_job(("https://a.org/",), {}).unique_key is None
    assert fetch.options(unique="one").opts.unique_for == 3600


def test_limit_keys_that_meet_at_send_time_are_refused() -> None:
    app = App("sqlite:///:memory:")

    @app.task(concurrency=[Limit("example.com", 1), Limit(_host, 3)])
    def fetch(url: str) -> None: ...

    assert fetch.new_job(("https://other.org/a",), {}).concurrency[1].key == "other.org"
    with pytest.raises(
        InvalidArgument,
        match=r"concurrency has two limits \(1 and 3\) on key 'example.com' for this call of "
        r"task .*fetch: give one Limit per key",
    ):
        fetch.send("https://example.com/a")
    with pytest.raises(InvalidArgument, match=r"send_many item 1: concurrency has two limits"):
        fetch.send_many([("https://other.org/a",), ("https://example.com/a",)])
    assert app.store.queues() == []


def test_options_override_per_call_and_leave_the_task_alone() -> None:
    app = App()

    @app.task(queue="a", priority=1)
    def job() -> None: ...

    other = job.options(queue="b", priority=9)
    assert (other.opts.queue, other.opts.priority) == ("b", 9)
    assert (job.opts.queue, job.opts.priority) == ("a", 1)
    assert other.name == job.name


def test_new_job_resolves_limit_and_unique_keys_at_send_time() -> None:
    app = App()

    @app.task(
        concurrency=Limit(key=lambda url: url.split("/")[2], limit=2),
        rate=Rate("2/s", burst=5, key=lambda url: url.split("/")[2]),
        breaker=Breaker(failures=3, cooldown="1m", key="sites"),
        unique=lambda url: url,
        unique_for="7d",
        retries=2,
    )
    def fetch(url: str) -> None: ...

    job = fetch.new_job(("https://example.com/a",), {})
    assert [(c.key, c.limit) for c in job.concurrency] == [("example.com", 2)]
    assert [(r.key, r.rate, r.burst) for r in job.rate] == [("example.com", 2.0, 5)]
    assert [(b.key, b.failures, b.cooldown) for b in job.breaker] == [("sites", 3, 60.0)]
    assert job.unique_key == f"{fetch.name}:https://example.com/a"
    assert job.unique_for == 7 * 86400
    assert job.max_attempts == 3
    assert job.fair_key == "example.com"


def test_limit_rate_and_breaker_validate_their_values() -> None:
    with pytest.raises(InvalidArgument, match="positive integer"):
        Limit("x", 0)
    with pytest.raises(InvalidArgument, match="not valid"):
        Rate("fast")
    with pytest.raises(InvalidArgument, match="burst"):
        Rate("1/s", burst=0)
    with pytest.raises(InvalidArgument, match="not a duration"):
        Breaker(failures=1, cooldown="soon")
    assert Rate("100/m").per_second == pytest.approx(100 / 60)
    assert Rate("5/10s").per_second == pytest.approx(0.5)


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        (30, 30.0),
        (1.5, 1.5),
        ("90s", 90.0),
        ("15m", 900.0),
        ("2h", 7200.0),
        ("7d", 604800.0),
        (timedelta(minutes=2), 120.0),
        ("250ms", 0.25),
    ],
)
def test_durations(value: object, seconds: float) -> None:
    assert parse_duration(value) == seconds  # type: ignore[arg-type]


def test_bad_durations() -> None:
    with pytest.raises(InvalidArgument, match="must not be negative"):
        parse_duration(-1)
    with pytest.raises(InvalidArgument, match="number of seconds"):
        parse_duration(True)


def test_connection_none_means_no_transaction_unless_the_task_takes_one() -> None:
    app = App("sqlite:///:memory:")

    @app.task
    def ship(order_id: int) -> int:
        return order_id

    @app.task
    def copy(order_id: int, connection: str | None = None) -> int:
        return order_id

    shipped = ship.send(42, connection=None)  # conn if in_transaction else None
    copied = copy.send(42, connection=None)
    assert shipped.job().kwargs == {}
    assert copied.job().kwargs == {"connection": None}
    app.close()


def test_connection_that_is_no_connection_is_refused_unless_the_task_takes_one() -> None:
    app = App("sqlite:///:memory:")

    @app.task
    def ship(order_id: int) -> int:
        return order_id

    @app.task
    def copy(order_id: int, connection: object = None) -> int:
        return order_id

    cursor = sqlite3.connect(":memory:").cursor()
    for value, named in [(cursor, "a sqlite3.Cursor"), (object(), "a builtins.object")]:
        with pytest.raises(InvalidArgument, match=f"connection= takes an open database .*{named}$"):
            ship.send(1, connection=value)
    with pytest.raises(SerializationError, match=r"kwargs\['connection'\] is a Cursor, not JSON"):
        copy.send(1, connection=cursor)  # the task's own argument
    assert app.store.queues() == []
    app.close()
