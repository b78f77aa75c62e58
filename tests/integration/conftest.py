"""Fixtures that run real ``rota`` processes and always stop them."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from procs import Processes

APPS = Path(__file__).parent / "apps"


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
