"""Bounded, event-driven waiting for tests: poll a condition until a deadline;
the lines worker processes have appended to a file; what a store says a
worker process holds; the test apps as modules; a job as
a store shows it, made by hand."""

from __future__ import annotations

import time
from collections.abc import Callable
from importlib import util
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

from rota.models import Job, JobQuery, JobState
from rota.stores import Store

T = TypeVar("T")

#: The apps that tests start real workers on (``tests/integration/apps``).
APPS = Path(__file__).parent / "integration" / "apps"


def load_test_app(name: str, module: str | None = None) -> ModuleType:
    """A fresh module of the test app ``APPS/NAME.py`` (named ``module``), run as
    a worker given its path runs it: its ``app`` is the one whose tasks a test
    sends, once pointed at the test's store."""
    spec = util.spec_from_file_location(module or f"rota_test_app_{name}", APPS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    loaded = util.module_from_spec(spec)
    spec.loader.exec_module(loaded)
    return loaded


def wait_for(
    condition: Callable[[], T], timeout: float = 10.0, interval: float = 0.01, what: str = ""
) -> T:
    """Return ``condition()``'s first truthy value; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what or condition}")
        time.sleep(interval)


def written(path: Path, timeout: float = 10.0, what: str = "") -> str:
    """The text of the file at ``path`` once another process has written some:
    a file that exists may still be empty (``write_text`` creates it first,
    then writes)."""
    return wait_for(
        lambda: path.read_text() if path.exists() else "", timeout, what=what or str(path)
    )


def appended_lines(path: Path) -> list[str]:
    """The whole lines of a file that worker processes append to ([] while it
    does not exist). A last line without its newline is still being written
    (a write that crosses a page of the file shows in two steps) and is left
    for the next look."""
    if not path.exists():
        return []
    text = path.read_text()
    return text[: text.rfind("\n") + 1].splitlines()


def held_by(store: Store, pid: int) -> set[str]:
    """Ids of running jobs whose lease belongs to the worker process ``pid``."""
    jobs = store.list_jobs(JobQuery(state=JobState.RUNNING), limit=1000).jobs
    return {j.id for j in jobs if j.worker is not None and f"-{pid}-" in j.worker}


def shown_job(**fields: Any) -> Job:
    """A :class:`~rota.models.Job` as a store would show it, for tests of what
    displays it: a first attempt of task ``t`` that succeeded, but for ``fields``."""
    made: dict[str, Any] = {
        "id": "j1",
        "task": "t",
        "queue": "default",
        "state": JobState.SUCCEEDED,
        "args": [],
        "kwargs": {},
        "priority": 0,
        "run_at": 0.0,
        "enqueued_at": 0.0,
        "attempt": 1,
        "max_attempts": 1,
        "lost": 0,
    }
    return Job(**(made | fields))
