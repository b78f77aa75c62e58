"""Fixtures that run real ``rota`` processes and always stop them."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest

from helpers import APPS, load_test_app
from procs import Processes, pids_in
from rota import App


@pytest.fixture
def processes(tmp_path: Path) -> Iterator[Processes]:
    """Start real rota processes; every one is killed at teardown, pass or fail."""
    procs = Processes(tmp_path)
    yield procs
    procs.stop_all()


@pytest.fixture
def app_path() -> Callable[[str], str]:
    """``app_path("counting")`` → the ``path.py:app`` spec of a test app."""
    return lambda name: f"{APPS / name}.py:app"


@pytest.fixture
def commands_sender(url: str) -> Iterator[App]:
    """The command tasks' test app (apps/commands.py), sending to the test's store."""
    app: App = load_test_app("commands").app
    app.url = url
    yield app
    app.close()


@pytest.fixture
def tree_pids(tmp_path: Path) -> Iterator[Path]:
    """The file a command's process tree writes its pids to (apps/forker.py);
    whatever still runs at teardown is killed, pass or fail."""
    path = tmp_path / "pids"
    yield path
    for pid in pids_in(path):
        with contextlib.suppress(psutil.Error):
            psutil.Process(pid).kill()
