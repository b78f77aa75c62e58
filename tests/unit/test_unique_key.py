"""``unique=True``: the key is the same for every way of writing one call."""

from __future__ import annotations

from typing import Any

import pytest

from rota import App
from rota.errors import InvalidArgument


class Unwritable:
    """A default value that is not JSON."""


def _key(task: Any, *args: Any, **kwargs: Any) -> str:
    key = task.new_job(args, kwargs).unique_key
    assert isinstance(key, str) and key.startswith(f"{task.name}:")
    return key


@pytest.fixture
def refresh() -> Any:
    app = App("sqlite:///:memory:")

    @app.task(name="refresh", unique=True)
    def refresh(feed: Any, full: bool = False, *rest: Any, **extra: Any) -> None: ...

    return refresh


@pytest.mark.parametrize(
    ("first", "second"),
    [
        pytest.param(
            ((), {"feed": "a", "full": True}), ((), {"full": True, "feed": "a"}), id="kw-order"
        ),
        pytest.param((("b",), {}), ((), {"feed": "b"}), id="positional-vs-keyword"),
        pytest.param((("b", True), {}), (("b",), {"full": True}), id="second-positional"),
        pytest.param((("b",), {}), (("b", False), {}), id="default-given"),
        pytest.param((("b",), {}), ((), {"feed": "b", "full": False}), id="default-by-keyword"),
        pytest.param((({"x": 1, "y": 2},), {}), (({"y": 2, "x": 1},), {}), id="dict-key-order"),
        pytest.param(
            (([{"a": {"c": 1, "b": 2}}],), {}),
            (([{"a": {"b": 2, "c": 1}}],), {}),
            id="nested-dict-key-order",
        ),
        pytest.param((((1, 2),), {}), (([1, 2],), {}), id="tuple-vs-list"),
        pytest.param(
            (("a",), {"x": 1, "y": 2}), (("a",), {"y": 2, "x": 1}), id="extra-kwargs-order"
        ),
    ],
)
def test_equal_calls_share_one_key(
    refresh: Any,
    first: tuple[tuple[Any, ...], dict[str, Any]],
    second: tuple[tuple[Any, ...], dict[str, Any]],
) -> None:
    assert _key(refresh, *first[0], **first[1]) == _key(refresh, *second[0], **second[1])


@pytest.mark.parametrize(
    ("first", "second"),
    [
        pytest.param((("a",), {}), (("b",), {}), id="other-value"),
        pytest.param((("a",), {}), (("a", True), {}), id="other-flag"),
        pytest.param(((1,), {}), ((True,), {}), id="int-vs-bool"),
        pytest.param(((1,), {}), ((1.0,), {}), id="int-vs-float"),
        pytest.param((("a", False, 1), {}), (("a", False), {"x": 1}), id="rest-vs-extra"),
        pytest.param((([1, 2],), {}), (([2, 1],), {}), id="list-order"),
        pytest.param((({"x": 1},), {}), (({"x": "1"},), {}), id="nested-value"),
        pytest.param((("a",), {}), (("a",), {"full": None}), id="default-vs-none"),
    ],
)
def test_different_calls_keep_different_keys(
    refresh: Any,
    first: tuple[tuple[Any, ...], dict[str, Any]],
    second: tuple[tuple[Any, ...], dict[str, Any]],
) -> None:
    assert _key(refresh, *first[0], **first[1]) != _key(refresh, *second[0], **second[1])


def test_a_call_that_fits_no_parameters_is_refused_before_it_gets_a_key(refresh: Any) -> None:
    with pytest.raises(InvalidArgument, match="cannot take this call: missing a required"):
        refresh.new_job((), {})


def test_a_default_that_is_not_json_counts_as_not_given() -> None:
    app = App("sqlite:///:memory:")
    marker = Unwritable()

    @app.task(unique=True)
    def fetch(url: str, session: Any = marker, depth: int = 0) -> None: ...

    assert _key(fetch, "u") == _key(fetch, url="u", depth=0)
    assert _key(fetch, "u") != _key(fetch, "u", None)


def test_options_copies_and_other_apps_give_the_same_key(refresh: Any) -> None:
    other = App("sqlite:///:memory:")
    again = other.task(name="refresh", unique=True)(refresh.fn)
    key = _key(refresh, "a", full=True)
    assert _key(refresh.options(queue="other"), full=True, feed="a") == key
    assert _key(again, feed="a", full=True) == key


def test_duplicates_are_caught_in_the_store(refresh: Any) -> None:
    refresh.app.admin.pause_queue("default")  # keep the jobs pending
    first = refresh.send(feed="a", full=True)
    assert not first.duplicate
    again = refresh.send(full=True, feed="a")
    assert again.duplicate and again.id == first.id
    assert refresh.send("b").duplicate is False
    assert refresh.send(feed="b").duplicate is True
    assert refresh.send({"x": 1, "y": 2}).duplicate is False
    assert refresh.send({"y": 2, "x": 1}).duplicate is True


def test_a_task_that_is_an_unhashable_callable_object_gets_keys_too() -> None:
    class Fetch:
        __hash__ = None  # type: ignore[assignment]

        def __call__(self, url: str, depth: int = 0) -> None: ...

    app = App("sqlite:///:memory:")
    fetch = app.task(name="fetch", unique=True)(Fetch())
    assert _key(fetch, "u") == _key(fetch, url="u", depth=0)
