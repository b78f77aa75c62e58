"""The input rules from Python: every refused value raises a precise rota error and
leaves the store as it was (on every store)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import decimal
import enum
import math
import re
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import rota
from rota import App, InvalidArgument, SerializationError
from rota._json import dumps
from rota._time import parse_duration
from rota._validate import MAX_DEPTH, MAX_DURATION, MAX_INT, MIN_INT, check_json
from rota.models import JobState
from rota.scheduling import every
from rota.stores import Store
from rota.worker.runner import run_sync, to_outcome


class Colour(enum.Enum):
    RED = "red"


class Level(enum.IntEnum):
    HIGH = 2


class Name(str):
    pass


@dataclasses.dataclass
class Point:
    x: int
    y: int


@pytest.fixture
def app(store: Store, url: str) -> Iterator[App]:
    app = App(url)
    app.use_store(store)
    yield app


def snapshot(store: Store) -> tuple[Any, ...]:
    """Everything a refused call could have written."""
    return (
        [(q.name, q.paused, dict(q.counts)) for q in store.queues()],
        [s.name for s in store.schedules()],
        [(i.key, i.override) for i in store.limits()],
    )


def nest(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = [value]
    return value


FOREIGN = [
    (dt.datetime(2024, 5, 1, 12, 0), "is a datetime, not JSON (send value.isoformat())"),
    (dt.date(2024, 5, 1), "is a date, not JSON (send value.isoformat())"),
    (dt.timedelta(seconds=3), "is a timedelta, not JSON (send value.total_seconds())"),
    (uuid.UUID(int=7), "is a UUID, not JSON (send str(value))"),
    (decimal.Decimal("1.5"), "is a Decimal, not JSON"),
    (b"raw", "is a bytes, not JSON"),
    ({1, 2}, "is a set, not JSON (send a list)"),
    (frozenset({1}), "is a frozenset, not JSON"),
    (Colour.RED, "is the enum member Colour.RED, not JSON (send its .value)"),
    (Level.HIGH, "is the enum member Level.HIGH"),
    (Name("x"), "is a Name (a subclass of str), not plain JSON"),
    (OrderedDict(a=1), "is an OrderedDict (a subclass of dict)"),
    (Point(1, 2), "is the dataclass Point, not JSON (send dataclasses.asdict(value))"),
    (object(), "is an object, not JSON"),
]


# -- arguments -------------------------------------------------------------------------


@pytest.mark.parametrize(("bad", "problem"), FOREIGN)
def test_foreign_argument_types_are_refused_with_their_path(
    app: App, store: Store, bad: Any, problem: str
) -> None:
    @app.task(name="t")
    def t(*args: Any, **kwargs: Any) -> None: ...

    before = snapshot(store)
    with pytest.raises(SerializationError) as info:
        t.send("ok", {"when": [bad]})
    assert str(info.value) == (
        f"task arguments must be JSON-serializable: args[1]['when'][0] {problem}"
        + str(info.value).split(problem, 1)[1]
    )
    with pytest.raises(SerializationError, match=r"kwargs\['at'\] "):
        t.send(at=bad)
    assert snapshot(store) == before


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_nan_and_infinity_are_refused_anywhere(app: App, store: Store, bad: float) -> None:
    @app.task(name="t")
    def t(*args: Any, **kwargs: Any) -> None: ...

    before = snapshot(store)
    calls: list[tuple[Callable[[], object], str]] = [
        (lambda: t.send(bad), "args[0]"),
        (lambda: t.send(1, [0, {"w": bad}]), "args[1][1]['w']"),
        (lambda: t.send(x=(bad,)), "kwargs['x'][0]"),
        (lambda: t.send_in(5, bad), "args[0]"),
        (lambda: t.send_at(dt.datetime(2030, 1, 1), bad), "args[0]"),
        (lambda: t.options(priority=3).send(bad), "args[0]"),
    ]
    for call, path in calls:
        with pytest.raises(SerializationError) as info:
            call()
        assert f"{path} is {bad!r}, not JSON" in str(info.value)
    assert snapshot(store) == before


def test_non_string_keys_are_refused(app: App, store: Store) -> None:
    @app.task(name="t")
    def t(*args: Any, **kwargs: Any) -> None: ...

    before = snapshot(store)
    for key in (1, None, (1, 2), 1.5):
        with pytest.raises(SerializationError) as info:
            t.send({"ok": {key: "v"}})
        assert f"args[0]['ok'] has the key {key!r} ({type(key).__name__})" in str(info.value)
    assert snapshot(store) == before


def test_integers_must_fit_in_64_signed_bits(app: App, store: Store) -> None:
    @app.task(name="t")
    def t(*args: Any) -> None: ...

    before = snapshot(store)
    for bad in (MAX_INT + 1, MIN_INT - 1, 10**400):
        with pytest.raises(SerializationError, match=r"args\[0\] is an integer beyond 64"):
            t.send(bad)
    assert snapshot(store) == before
    handle = t.send(MAX_INT, MIN_INT, True, None, -0.0, 1e308)
    assert handle.job().args == [MAX_INT, MIN_INT, True, None, -0.0, 1e308]


def test_nesting_is_bounded(app: App, store: Store) -> None:
    @app.task(name="t")
    def t(*args: Any, **kwargs: Any) -> None: ...

    before = snapshot(store)
    with pytest.raises(SerializationError, match=f"deeper than {MAX_DEPTH} levels"):
        t.send(nest(MAX_DEPTH + 1))
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(SerializationError, match="deeper than"):
        t.send(loop)
    with pytest.raises(SerializationError, match="deeper than"):
        t.send(x={"a": nest(MAX_DEPTH)})
    assert snapshot(store) == before
    assert t.send(nest(MAX_DEPTH)).job().args == [nest(MAX_DEPTH)]


def test_tuples_become_lists_and_plain_values_round_trip(app: App) -> None:
    @app.task(name="t")
    def t(*args: Any, **kwargs: Any) -> None: ...

    job = t.send((1, ("a", None)), "é\u2603", k={"x": (0.1, False)}).job()
    assert job.args == [[1, ["a", None]], "é\u2603"]
    assert job.kwargs == {"k": {"x": [0.1, False]}}


def test_send_many_refuses_every_item_or_none(app: App, store: Store) -> None:
    @app.task(name="t")
    def t(*args: Any, **kwargs: Any) -> None: ...

    before = snapshot(store)
    with pytest.raises(SerializationError, match=r"send_many item 2: .*args\[0\] is nan"):
        t.send_many([(1,), {"a": 2}, (math.nan,)])
    with pytest.raises(SerializationError, match=r"send_many item 1: .*kwargs\['a'\] is a UUID"):
        t.send_many([(1,), {"a": uuid.uuid4()}])
    with pytest.raises(InvalidArgument, match="send_many item 0: items are tuples or dicts"):
        t.send_many([5])  # type: ignore[list-item]
    assert snapshot(store) == before


def test_schedule_arguments_follow_the_same_rules(app: App, store: Store) -> None:
    @app.task(name="t")
    def t(*args: Any, **kwargs: Any) -> None: ...

    with pytest.raises(SerializationError, match=r"schedule 's': .*args\[0\]\['at'\] is a date"):
        app.schedule("s", t, every(60), args=({"at": dt.date.today()},))
    with pytest.raises(SerializationError, match=r"kwargs\['x'\] is inf"):
        app.schedule("s", t, every(60), kwargs={"x": math.inf})
    assert store.schedules() == []


def test_a_call_the_function_cannot_take_is_refused_wherever_it_is_made(
    app: App, store: Store
) -> None:
    """The worker would fail every attempt of it with a TypeError."""

    @app.task(name="add")
    def add(a: int, b: int, *, scale: int = 1) -> int:
        return (a + b) * scale

    before = snapshot(store)
    calls: list[tuple[Callable[[], object], str]] = [
        (lambda: add.send(1, 2, 3), "too many positional arguments"),  # type: ignore[call-arg]
        (lambda: add.send(1), "missing a required argument: 'b'"),  # type: ignore[call-arg]
        (lambda: add.send(1, 2, c=3), "unexpected keyword argument 'c'"),  # type: ignore[call-arg]
        (lambda: add.send_many([(1, 2), (1,)]), r"send_many item 1: task 'add' cannot take"),
        (lambda: app.admin.send("add", [1], {"c": 2}), "missing a required argument"),
        (lambda: app.schedule("s", add, every(60), args=(1,)), "missing a required argument"),
    ]
    for call, message in calls:
        with pytest.raises(InvalidArgument, match=message):
            call()
    assert snapshot(store) == before
    assert add.send(1, b=2, scale=3).result is not None  # every way of a right call goes


def test_a_key_function_that_raises_refuses_the_call_naming_it(app: App, store: Store) -> None:
    @app.task(name="fetch", concurrency=rota.Limit(key=lambda url: url.split("/")[2], limit=1))
    def fetch(url: str) -> None: ...

    before = snapshot(store)
    with pytest.raises(InvalidArgument, match="key function '<lambda>' raised IndexError") as no:
        fetch.send("nourl")
    assert isinstance(no.value.__cause__, IndexError)
    with pytest.raises(InvalidArgument, match="send_many item 1: key function"):
        fetch.send_many([("http://a/b",), ("nourl",)])
    assert snapshot(store) == before


# -- results ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"n": math.nan}, "task result must be JSON-serializable: result['n'] is nan, not JSON"),
        ([dt.datetime(2024, 1, 1)], "result[0] is a datetime, not JSON"),
        ({1: "x"}, "result has the key 1 (int)"),
    ],
)
def test_a_result_that_is_not_json_fails_the_job_without_retry(
    app: App, store: Store, value: Any, message: str
) -> None:
    @app.task(name="r", retries=3)
    def r() -> Any:
        return value

    handle = r.send()
    [claimed] = store.claim("w", ["default"], 1)
    result = run_sync(app, claimed)
    assert not result.ok and not result.retryable
    assert store.finish([to_outcome(claimed, result)]) == [True]
    job = handle.job()
    assert job.state is JobState.FAILED
    assert (job.attempt, job.max_attempts) == (1, 4)
    assert job.error is not None and job.error.startswith("SerializationError: ")
    assert message in job.error


# -- options, durations, names ---------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"priority": True}, "priority must be an integer, not True"),
        ({"priority": 2**31}, "priority must be at most 2147483647"),
        ({"priority": -(2**31)}, "priority must be at least -2147483647"),
        ({"priority": 2**64}, "priority must be at most"),
        ({"priority": 1.0}, "priority must be an integer, not 1.0"),
        ({"retries": 10_001}, "retries must be at most 10000"),
        ({"retries": False}, "retries must be an integer"),
        ({"max_lost": 0}, "max_lost must be at least 1"),
        ({"max_lost": 2**70}, "max_lost must be at most 10000"),
        ({"timeout": math.nan}, "timeout must be finite, not nan"),
        ({"timeout": math.inf}, "timeout must be finite, not inf"),
        ({"timeout": 0}, "timeout must be above 0"),
        ({"timeout": 10**400}, "timeout 1000.* is too long: at most 100 years"),
        ({"lease": math.nan}, "lease must be finite"),
        ({"lease": -1}, "lease must not be negative"),
        ({"unique_for": math.inf}, "unique_for must be finite"),
        ({"backoff": (math.nan, 1)}, "backoff base must be finite"),
        ({"backoff": (1, math.inf)}, "backoff max must be finite"),
        ({"backoff": 5}, "backoff must be (base, max)"),
        ({"backoff": (1, 2, 3)}, "backoff must be (base, max)"),
        ({"queue": ""}, "queue must be a non-empty string"),
        ({"queue": " q"}, "surrounding spaces"),
        ({"queue": "a\nb"}, "control characters"),
        ({"queue": "q" * 201}, "201 characters; at most 200"),
        ({"queue": 5}, "queue must be a non-empty string, not 5"),
        ({"unique": 5}, "unique key must be a string or a function, not 5"),
        ({"unique": ""}, "unique key must be a non-empty string"),
        ({"concurrency": rota.Rate("1/s")}, "concurrency takes rota.Limit values"),
    ],
)
def test_bad_options_are_refused_and_change_nothing(
    app: App, store: Store, options: dict[str, Any], message: str
) -> None:
    @app.task(name="t")
    def t() -> None: ...

    before = snapshot(store)
    with pytest.raises(InvalidArgument, match=message.replace("(", r"\(").replace(")", r"\)")):
        t.options(**options).send()
    with pytest.raises(InvalidArgument):
        app.task(name="other", **options)(lambda: None)
    assert snapshot(store) == before
    assert "other" not in app.tasks


def test_bounds_are_inclusive_and_stored_exactly(app: App) -> None:
    @app.task(name="t")
    def t() -> None: ...

    for priority in (2**31 - 1, -(2**31 - 1)):
        job = t.options(priority=priority, retries=10_000, max_lost=10_000).send().job()
        assert (job.priority, job.max_attempts) == (priority, 10_001)
    assert t.options(priority=Level.HIGH).opts.priority == 2
    assert type(t.options(priority=Level.HIGH).opts.priority) is int


def test_durations_take_exponents() -> None:
    assert parse_duration("1e5") == 100_000.0
    assert parse_duration("1.5E3m") == 90_000.0


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (math.nan, "must be finite"),
        (-math.inf, "must be finite"),
        (-1, "must not be negative"),
        ("-1", "must not be negative, got '-1'"),
        ("-1.5m", "must not be negative, got '-1.5m'"),
        (True, "must be a number of seconds"),
        (10**400, "at most 100 years"),
        ("9" * 400, "is too long: at most 100 years"),
        ("1e300", "delay '1e300' is too long: at most 100 years"),
        ("1e400", "delay '1e400' is too long: at most 100 years"),
        ("1e5x", "is not a duration"),
        (dt.timedelta(days=365 * 101), "at most 100 years"),
        (None, "must be a number of seconds"),
    ],
)
def test_durations_are_finite_and_bounded(app: App, store: Store, value: Any, message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        parse_duration(value, what="delay")

    @app.task(name="t")
    def t() -> None: ...

    before = snapshot(store)
    with pytest.raises(InvalidArgument, match=message):
        t.send_in(value)
    assert snapshot(store) == before
    assert parse_duration(MAX_DURATION) == MAX_DURATION
    assert parse_duration("100ms") == pytest.approx(0.1)


def test_send_at_takes_a_datetime(app: App, store: Store) -> None:
    @app.task(name="t")
    def t() -> None: ...

    with pytest.raises(InvalidArgument, match="expected a datetime, not str"):
        t.send_at("2030-01-01")  # type: ignore[arg-type]
    assert snapshot(store)[0] == []


def test_task_names_are_checked_at_registration() -> None:
    app = App()
    for name, message in [("", "task name must be a non-empty"), ("a\tb", "control")]:
        with pytest.raises(InvalidArgument, match=message):
            app.task(name=name)(lambda: None)
    with pytest.raises(InvalidArgument, match=re.escape("@app.task(name='my.name')")):
        app.task("my.name")  # type: ignore[call-overload]
    with pytest.raises(InvalidArgument, match="takes a function, not 5"):
        app.task(5)  # type: ignore[call-overload]
    assert list(app.tasks) == []


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: rota.Limit("k", True), "concurrency limit must be an integer, not True"),
        (lambda: rota.Limit("k", 10**7), "concurrency limit must be at most 1000000"),
        (lambda: rota.Limit("", 2), "concurrency limit key must be a non-empty string"),
        (
            lambda: rota.Limit(5, 2),  # type: ignore[arg-type]
            "concurrency limit key must be a string or a function",
        ),
        (lambda: rota.Rate(math.nan), "rate must be from one per 100 years"),
        (lambda: rota.Rate(math.inf), "rate must be from"),
        (lambda: rota.Rate(1e-30), "rate must be from"),
        (lambda: rota.Rate(10**400), "rate must be from"),
        (lambda: rota.Rate(True), "rate must be a number or a string"),
        (lambda: rota.Rate("1/0s"), "empty time window"),
        (lambda: rota.Rate("1/" + "9" * 5000 + "s"), "is not valid"),
        (lambda: rota.Rate("1/s", burst=True), "rate burst must be an integer"),
        (lambda: rota.Rate("1/s", key="k\n"), "rate key 'k\\\\n' must not have control"),
        (lambda: rota.Breaker(failures=True), "breaker failures must be an integer"),
        (lambda: rota.Breaker(cooldown=math.nan), "breaker cooldown must be finite"),
        (lambda: rota.Breaker(key=" "), "breaker key must be a non-empty string"),
    ],
)
def test_flow_control_values_are_checked(make: Any, message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        make()


def test_limit_keys_from_functions_are_names(app: App, store: Store) -> None:
    @app.task(name="t", concurrency=rota.Limit(key=lambda url: url, limit=2))
    def t(url: str) -> None: ...

    before = snapshot(store)
    with pytest.raises(InvalidArgument, match=r"limit key 'x+'\.\.\. is 300 characters"):
        t.send("x" * 300)
    with pytest.raises(InvalidArgument, match="limit key 'a\\\\nb' must not have control"):
        t.send("a\nb")
    assert snapshot(store) == before
    assert t.send("example.com").job().limit_keys


def test_limit_overrides_refuse_bools_names_and_huge_values(app: App, store: Store) -> None:
    before = snapshot(store)
    for key, value, message in [
        ("k", True, "limit must be an integer, not True"),
        ("k", 2**70, "limit must be at most 1000000"),
        ("k", -1, "limit must be a non-negative integer"),
        ("k", 1.0, "limit must be an integer, not 1.0"),
        ("", 3, "limit key must be a non-empty string"),
        ("k\x00", 3, "control characters"),
    ]:
        with pytest.raises(InvalidArgument, match=message):
            app.limits.set(key, value)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match="limit key must be a non-empty"):
        app.limits.clear("")
    with pytest.raises(InvalidArgument, match="limit key must be a non-empty"):
        app.limits.reset_breaker("")
    assert snapshot(store) == before
    app.limits.set("k", 1_000_000)
    assert [(i.key, i.override) for i in store.limits()] == [("k", 1_000_000)]


def test_bounds_lie_within_what_every_store_accepts() -> None:
    from rota import _validate
    from rota.stores import _checks

    assert -_checks.MAX_PRIORITY <= _validate.MIN_PRIORITY
    assert _validate.MAX_PRIORITY <= _checks.MAX_PRIORITY
    assert _validate.MAX_RETRIES + 1 <= _checks.MAX_COUNT
    assert _validate.MAX_LOST <= _checks.MAX_COUNT
    assert _validate.MAX_LIMIT <= _checks.MAX_LIMIT
    assert _validate.MAX_LIMIT <= _checks.MAX_COUNT
    assert _validate.MAX_DURATION <= _checks.MAX_SECONDS
    assert _validate.MAX_RATE <= _checks.MAX_RATE
    assert max(-_validate.MIN_INT, _validate.MAX_INT) < 2**64


def test_app_settings_are_checked() -> None:
    with pytest.raises(InvalidArgument, match="lease must be finite"):
        App(lease=math.nan)
    with pytest.raises(InvalidArgument, match="lease must be above 0"):
        App(lease=0)
    with pytest.raises(InvalidArgument, match="payload_cap must be an integer, not True"):
        App(payload_cap=True)
    with pytest.raises(InvalidArgument, match="retention must be finite"):
        App(retention=math.inf)


def test_other_encodings_follow_the_same_rules() -> None:
    with pytest.raises(SerializationError, match=r"value\[0\] is nan"):
        dumps([math.nan])
    with pytest.raises(SerializationError, match=r"value\[0\] is a str with a lone surrogate"):
        dumps(["\ud800"])
    check_json({"a": [1, 2.5, "x", None, True]})
