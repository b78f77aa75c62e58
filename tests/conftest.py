"""Fixtures shared by every test tier."""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from backends import IN_CI, available_backends, drop_store, store_url
from rota.stores import Store, open_store
from rota.stores.sqlite._wakeups import wake_directory

# pytest-xdist's test processes set a terminal size of 80x24; the `rota`
# commands the tests start read it and would print 80-column tables into
# pipes, where a command run from a script prints them at full width.
for _name in ("COLUMNS", "LINES"):
    os.environ.pop(_name, None)


@pytest.fixture(params=available_backends())
def backend(request: pytest.FixtureRequest) -> str:
    """The name of each store backend in turn."""
    return str(request.param)


@pytest.fixture
def url(backend: str, tmp_path: Path) -> Iterator[str]:
    """A fresh store URL of the current backend, cleaned up afterwards."""
    value = store_url(backend, tmp_path)
    yield value
    drop_store(backend, value)


@pytest.fixture
def store(url: str) -> Iterator[Store]:
    """An open, empty store of the current backend."""
    opened = open_store(url)
    yield opened
    opened.close()


@pytest.fixture(autouse=True)
def _wake_directories_removed(request: pytest.FixtureRequest) -> Iterator[None]:
    """A SQLite database in a long path keeps its wake-up sockets and its
    writers' lock file in the system's temporary directory (beside it, a
    socket's path would be too long); a test's databases end with it, and so
    do those, instead of piling up there run after run."""
    tmp_path = request.getfixturevalue("tmp_path") if "tmp_path" in request.fixturenames else None
    yield
    if tmp_path is None:
        return
    for database in Path(tmp_path).rglob("*"):  # (a database may have any name)
        directory = Path(wake_directory(str(database)))
        if directory.parent == Path(tempfile.gettempdir()) and directory.exists():
            shutil.rmtree(directory, ignore_errors=True)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Unload the store's Redis Functions library, and the flow rules' test
    harness (tests/conformance/test_lua_flow.py), from the shared test Redis:
    every change to rota's Lua loads a library of another name, and a run
    still using this one loads it again on its next call. Under pytest-xdist
    only the controller does it, once every test process is done (a test
    process that unloaded a library would pull it from under the others)."""
    if hasattr(session.config, "workerinput") or "redis" not in available_backends():
        return
    import redis

    from backends import REDIS_URL
    from rota.stores.redis import scripts

    harness = Path(__file__).parent / "conformance" / "lua" / "flow_rules.lua"
    libraries = (scripts.library(), scripts.build({"flow_rules": harness.read_text()}))
    client = redis.Redis.from_url(REDIS_URL, socket_connect_timeout=1)
    try:
        for library in libraries:
            with contextlib.suppress(redis.ResponseError):  # never loaded
                client.function_delete(library.name)
    except redis.RedisError:  # the service gone
        pass
    finally:
        client.close()


def _failed_in_ci(report: pytest.CollectReport | pytest.TestReport) -> None:
    """In CI (``CI=true``) a skip is a failure: every store, driver and tool
    a test needs is installed there, so a skip would hide a test users rely
    on (an expected failure, ``xfail``, stays what it is)."""
    if not (IN_CI and report.skipped) or hasattr(report, "wasxfail"):
        return
    reason = report.longrepr[-1] if isinstance(report.longrepr, tuple) else report.longrepr
    report.outcome = "failed"
    report.longrepr = f"skipped in CI, where nothing may skip: {reason}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    _failed_in_ci(outcome.get_result())  # type: ignore[attr-defined]


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Iterator[None]:
    outcome = yield
    _failed_in_ci(outcome.get_result())  # type: ignore[attr-defined]
