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
def sender_of() -> Iterator[Callable[[str, str], App]]:
    """``sender_of("faults", url)`` → the ``app`` of a fresh copy of the test
    app ``apps/faults.py``, sending to the store at ``url``; every app made so
    is closed at teardown."""
    made: list[App] = []

    def sender(name: str, url: str) -> App:
        app: App = load_test_app(name).app
        app.url = url
        made.append(app)
        return app

    yield sender
    for app in made:
        app.close()


@pytest.fixture
def commands_sender(sender_of: Callable[[str, str], App], url: str) -> App:
    """The command tasks' test app (apps/commands.py), sending to the test's store."""
    return sender_of("commands", url)


@pytest.fixture
def tree_pids(tmp_path: Path) -> Iterator[Path]:
    """The file a command's process tree writes its pids to (apps/forker.py);
    whatever still runs at teardown is killed, pass or fail."""
    path = tmp_path / "pids"
    yield path
    for pid in pids_in(path):
        with contextlib.suppress(psutil.Error):
            psutil.Process(pid).kill()
