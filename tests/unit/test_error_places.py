"""Errors of a bad send or schedule say where the problem is."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

import rota
from rota import App, every
from rota._json import dumps
from rota.errors import InvalidArgument, PayloadTooLarge, SerializationError, UnknownTask

BIG = "x" * 2_000_000


@pytest.fixture
def app() -> Iterator[App]:
    app = App("sqlite:///:memory:")
    yield app
    app.close()


@pytest.fixture
def add(app: App) -> Any:
    @app.task(name="add")
    def add(x: Any, y: Any = 0) -> Any:
        return x + y

    return add


def _nothing_stored(app: App) -> None:
    assert app.store.queues() == []
    assert app.store.schedules() == []


def test_send_many_names_the_item_over_the_payload_cap(app: App, add: Any) -> None:
    with pytest.raises(PayloadTooLarge) as caught:
        add.send_many([(1, 2)] * 3 + [(BIG, "")])
    assert str(caught.value).startswith("send_many item 3: payload is 2000")
    assert "over the cap of 1048576 bytes" in str(caught.value)
    assert (caught.value.size, caught.value.cap) == (2_000_028, 1_048_576)
    _nothing_stored(app)


@pytest.mark.parametrize(
    ("args", "kwargs", "path"),
    [
        (({"a": [1, {"b": "\ud800"}]}, 1), {}, "args[0]['a'][1]['b']"),
        (("ok", "\udfff"), {}, "args[1]"),
        ((), {"x": {"k": ["fine", "bad \udc80 text"]}}, "kwargs['x']['k'][1]"),
        (({"\ud800": 1},), {}, "args[0]"),
        ((1,), {"y": ("a", "\ud83d")}, "kwargs['y'][1]"),
    ],
)
def test_a_lone_surrogate_is_named_by_its_path(
    app: App, add: Any, args: tuple[Any, ...], kwargs: dict[str, Any], path: str
) -> None:
    with pytest.raises(SerializationError) as caught:
        add.send(*args, **kwargs)
    message = str(caught.value)
    assert message.startswith(f"task arguments must be JSON-serializable: {path} ")
    assert "lone surrogate" in message and "UTF-8" in message
    _nothing_stored(app)


def test_a_lone_surrogate_key_is_named_as_a_key(add: Any) -> None:
    with pytest.raises(SerializationError, match=r"args\[0\] has the key '\\ud800'"):
        add.send({"\ud800": 1})


def test_send_many_and_results_name_the_surrogate_too(app: App, add: Any) -> None:
    with pytest.raises(SerializationError, match=r"^send_many item 1: .*args\[0\]\[0\] "):
        add.send_many([(1,), (["\ud800"],)])
    with pytest.raises(SerializationError, match=r"task result .* result\['a'\] "):
        dumps({"a": "\udc00"}, what="task result", root="result")
    _nothing_stored(app)


@pytest.mark.parametrize(
    "when",
    [
        datetime(9999, 1, 1, tzinfo=UTC),
        datetime(9999, 12, 31, 23, 59),  # naive: UTC
        datetime.now(UTC) + timedelta(days=365.25 * 100 + 2),
    ],
)
def test_send_at_out_of_range_says_so_in_words(app: App, add: Any, when: datetime) -> None:
    with pytest.raises(InvalidArgument) as caught:
        add.send_at(when, 1, 2)
    message = str(caught.value)
    assert message.startswith("send_at time ")
    assert "is more than 100 years from now" in message
    assert "job" not in message and "run_at" not in message
    _nothing_stored(app)


def test_send_at_before_the_earliest_time_rota_keeps_says_so(app: App, add: Any) -> None:
    with pytest.raises(InvalidArgument) as caught:
        add.send_at(datetime(1, 1, 1), 1, 2)
    assert str(caught.value) == (
        "send_at time 0001-01-01 00:00:00 UTC is before 0001-01-02 00:00 UTC, "
        "the earliest time rota keeps"
    )
    _nothing_stored(app)


def test_send_at_within_range_and_in_the_past_is_taken(app: App, add: Any) -> None:
    assert add.send_at(datetime.now(UTC) + timedelta(days=365 * 99), 1).status() == "scheduled"
    assert add.send_at(datetime(1970, 1, 2, tzinfo=UTC), 1).status() == "queued"


@pytest.mark.parametrize("through", ["app", "admin"])
def test_schedule_of_an_unknown_task_names_the_schedule(app: App, add: Any, through: str) -> None:
    with pytest.raises(UnknownTask) as caught:
        if through == "app":
            app.schedule("nightly", "ad", every(60))
        else:  # as rota schedules add and the dashboard define one
            app.admin.add_schedule("nightly", "ad", every(60))
    message = str(caught.value)
    assert message.startswith("schedule 'nightly': unknown task 'ad' (registered: add)")
    assert "did you mean 'add'?" in message
    assert caught.value.name == "ad"
    _nothing_stored(app)


def test_schedule_over_the_payload_cap_names_the_schedule(app: App, add: Any) -> None:
    for call in (
        lambda: app.schedule("nightly", add, every(60), args=(BIG,)),
        lambda: app.schedule("nightly", "add", every(60), kwargs={"x": BIG}),
        lambda: app.admin.add_schedule("nightly", "add", every(60), args=(BIG,)),
    ):
        with pytest.raises(PayloadTooLarge) as caught:
            call()
        assert str(caught.value).startswith("schedule 'nightly': payload is 20000")
        assert caught.value.cap == 1_048_576
    _nothing_stored(app)


def test_messages_keep_their_error_types() -> None:
    assert issubclass(PayloadTooLarge, rota.RotaError)
    assert str(PayloadTooLarge(10, 5)) == "payload is 10 bytes, over the cap of 5 bytes"
    assert str(UnknownTask("x")).startswith("unknown task 'x'; register it")
