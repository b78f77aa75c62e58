"""Bounded, event-driven waiting for tests: poll a condition until a deadline;
what a store says a worker process holds; the test apps as modules."""

from __future__ import annotations

import time
from collections.abc import Callable
from importlib import util
from pathlib import Path
from types import ModuleType
from typing import TypeVar

from rota.models import JobQuery, JobState
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


def held_by(store: Store, pid: int) -> set[str]:
    """Ids of running jobs whose lease belongs to the worker process ``pid``."""
    jobs = store.list_jobs(JobQuery(state=JobState.RUNNING), limit=1000).jobs
    return {j.id for j in jobs if j.worker is not None and f"-{pid}-" in j.worker}
