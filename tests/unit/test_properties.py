"""Property-based tests of the input rules (hypothesis, bounded): whatever is
accepted round-trips exactly through a real SQLite store, whatever carries a
value that would not round-trip is refused and stores nothing, options raise
only InvalidArgument, and the CLI's argument parsing never ends in a traceback."""

from __future__ import annotations

import dataclasses
import datetime as dt
import decimal
import enum
import math
import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rota import App, InvalidArgument, SerializationError, Task
from rota._validate import MAX_INT, MIN_INT, check_call, check_json
from rota.cli import main

FAST = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


class Colour(enum.Enum):
    RED = 1


class Tag(str):
    pass


@dataclasses.dataclass
class Point:
    x: int


text = st.text(st.characters(exclude_categories=["Cs"]), max_size=20)
scalars = (
    st.none()
    | st.booleans()
    | st.integers(MIN_INT, MAX_INT)
    | st.floats(allow_nan=False, allow_infinity=False)
    | text
)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(text, inner, max_size=4)
    ),
    max_leaves=20,
)
kwargs_dicts = st.dictionaries(
    st.from_regex(r"[a-z_][a-z0-9_]{0,8}", fullmatch=True), json_values, max_size=4
)

bad_leaves = st.sampled_from(
    [
        math.nan,
        math.inf,
        -math.inf,
        MAX_INT + 1,
        MIN_INT - 1,
        dt.datetime(2024, 1, 1),
        dt.date(2024, 1, 1),
        uuid.UUID(int=1),
        decimal.Decimal("0.1"),
        b"x",
        {1, 2},
        Colour.RED,
        Tag("t"),
        Point(1),
        {1: "int key"},
        {("a",): "tuple key"},
        object(),
    ]
)


def poisoned(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """One bad value somewhere inside otherwise good JSON."""
    return st.one_of(
        st.builds(
            lambda good, bad, at: [*good[:at], bad, *good[at:]],
            st.lists(json_values, max_size=3),
            inner,
            st.integers(0, 3),
        ),
        st.builds(
            lambda good, key, bad: {**good, key: bad},
            st.dictionaries(text, json_values, max_size=3),
            text,
            inner,
        ),
    )


bad_values = st.recursive(bad_leaves, poisoned, max_leaves=4)


def plain(value: Any) -> Any:
    """``value`` as it decodes from JSON: tuples become lists."""
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[App]:
    app = App(f"sqlite:///{tmp_path_factory.mktemp('props') / 'rota.db'}")
    yield app
    app.close()


@pytest.fixture(scope="module")
def echo(app: App) -> Task[..., Any]:
    @app.task(name="echo")
    def echo(*args: Any, **kwargs: Any) -> None: ...

    return echo


def stored(app: App) -> int:
    return sum(sum(q.counts.values()) for q in app.store.queues())


@FAST
@given(args=st.lists(json_values, max_size=4), kwargs=kwargs_dicts)
def test_json_that_round_trips_is_accepted_and_read_back_equal(
    app: App, echo: Task[..., Any], args: list[Any], kwargs: dict[str, Any]
) -> None:
    job = echo.send(*args, **kwargs).job()
    assert job.args == plain(args)
    assert job.kwargs == plain(kwargs)


@FAST
@given(calls=st.lists(st.lists(json_values, max_size=3), min_size=1, max_size=4))
def test_send_many_round_trips_every_call(
    app: App, echo: Task[..., Any], calls: list[list[Any]]
) -> None:
    handles = echo.send_many([tuple(c) for c in calls])
    assert [h.job().args for h in handles] == [plain(c) for c in calls]


@FAST
@given(bad=bad_values, where=st.sampled_from(["args", "kwargs", "many", "options"]))
def test_anything_that_would_not_round_trip_is_refused_and_stores_nothing(
    app: App, echo: Task[..., Any], bad: Any, where: str
) -> None:
    before = stored(app)
    with pytest.raises(SerializationError, match="must be JSON-serializable: "):
        if where == "args":
            echo.send(1, bad)
        elif where == "kwargs":
            echo.send(x=bad)
        elif where == "many":
            echo.send_many([(1,), (bad,)])
        else:
            echo.options(priority=1).send(bad)
    assert stored(app) == before


@FAST
@given(items=st.lists(scalars | bad_leaves | st.integers() | st.floats(), max_size=6))
def test_the_flat_fast_path_agrees_with_the_full_check(items: list[Any]) -> None:
    def accepted(check: Any) -> bool:
        try:
            check()
        except SerializationError:
            return False
        return True

    one_by_one = all(accepted(lambda item=item: check_json(item)) for item in items)
    assert accepted(lambda: check_call(tuple(items), {}, "args")) == one_by_one


numbers = st.integers() | st.floats() | st.booleans() | st.integers(-(2**70), 2**70)
OPTIONS = ["priority", "retries", "max_lost", "timeout", "lease", "unique_for"]


@FAST
@given(
    values=st.dictionaries(st.sampled_from(OPTIONS), numbers, min_size=1, max_size=3),
    backoff=st.none() | st.tuples(numbers, numbers),
)
def test_options_validate_or_raise_invalid_argument_only(
    app: App, echo: Task[..., Any], values: dict[str, Any], backoff: Any
) -> None:
    if backoff is not None:
        values["backoff"] = backoff
    try:
        task = echo.options(**values)
    except InvalidArgument:
        return
    job = task.send().job()  # what validates, every store holds
    assert job.priority == task.opts.priority
    assert job.max_attempts == task.opts.retries + 1


# -- the CLI -------------------------------------------------------------------------

APP_SOURCE = """
    import rota

    app = rota.App()

    @app.task(name="echo")
    def echo(*args, **kwargs):
        return None
"""

cli_texts = (
    st.text(st.characters(exclude_categories=["Cs"]), max_size=30)
    | json_values.map(repr)
    | st.sampled_from(["NaN", "-Infinity", "[1, NaN]", "1e999", "[" * 3000, "[" * 100 + "]" * 100])
    | st.integers().map(str)
)


@pytest.fixture(scope="module")
def cli_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    tmp = tmp_path_factory.mktemp("cli")
    (tmp / "propapp.py").write_text(textwrap.dedent(APP_SOURCE))
    saved_path, saved_modules = list(sys.path), set(sys.modules)
    yield f"{tmp / 'propapp.py'}:app", f"sqlite:///{Path(tmp) / 'rota.db'}"
    sys.path[:] = saved_path
    for name in set(sys.modules) - saved_modules:
        del sys.modules[name]


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(args=st.lists(cli_texts, max_size=3), as_json=st.none() | cli_texts)
def test_cli_argument_parsing_succeeds_or_exits_2(
    cli_app: tuple[str, str], args: list[str], as_json: str | None
) -> None:
    spec, url = cli_app
    argv = ["--url", url, "send", spec, "echo"]
    argv += ["--json", as_json] if as_json is not None else ["--", *args]
    result = CliRunner(env={"ROTA_URL": None}).invoke(main, argv)
    assert result.exit_code in (0, 2), result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    if result.exit_code == 2:
        assert "Error:" in result.output
