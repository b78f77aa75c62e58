"""``Breaker(ignore=...)``: failures on the errors a breaker ignores count
neither way, decided from the job alone (the classes travel by name)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import rota.testing
from rota import App, Breaker
from rota.errors import InvalidArgument
from rota.models import JobState
from rota.scheduling import every

app = App()


class BadRecord(ValueError):
    """A record the job refuses: the API is fine."""


@app.task(breaker=Breaker(2, "5m", key="billing", ignore=(ValueError,)))
def charge(kind: str) -> None:
    if kind == "bad":
        raise BadRecord("no amount")
    if kind == "down":
        raise ConnectionError("billing API refused the connection")


@pytest.fixture
def inline_app() -> Iterator[App]:
    with rota.testing.inline(app):
        yield app


def billing_failures(app: App) -> tuple[int, float | None]:
    info = {i.key: i for i in app.limits.list()}["billing"]
    return info.failures, info.open_until


def test_an_ignored_error_neither_counts_nor_resets(inline_app: App) -> None:
    charge.send("down")
    assert billing_failures(inline_app) == (1, None)
    bad = charge.send("bad")  # a subclass of the ignored ValueError
    assert bad.job().state is JobState.FAILED
    assert billing_failures(inline_app) == (1, None)
    charge.send("down")
    failures, open_until = billing_failures(inline_app)
    assert failures == 2
    assert open_until is not None


def test_a_job_carries_the_ignored_classes_by_name() -> None:
    (breaker,) = charge.new_job(("bad",), {}).breaker
    assert breaker.ignore == ("builtins.ValueError",)
    options = charge.options(breaker=Breaker(3, 60, key="billing", ignore=BadRecord))
    (breaker,) = options.new_job(("bad",), {}).breaker
    assert breaker.ignore == (f"{__name__}.BadRecord",)


def test_a_schedule_keeps_the_ignored_classes(inline_app: App) -> None:
    stored = inline_app.schedule("nightly-charge", charge, every(hours=24), args=("ok",))
    job = rota.scheduling.define.schedule_job(stored, job_id="j", fire_time=0.0)
    assert job.breaker == charge.new_job(("ok",), {}).breaker


@pytest.mark.parametrize("ignore", ["ValueError", (ValueError, 3), [None]])
def test_ignore_takes_exception_classes(ignore: object) -> None:
    with pytest.raises(InvalidArgument, match="breaker ignore takes exception classes"):
        Breaker(ignore=ignore)  # type: ignore[arg-type]
