"""Fixtures shared by the unit tests."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest


@pytest.fixture
def isolated_imports() -> Iterator[None]:
    """Undo what loading an app file does to ``sys.path`` and ``sys.modules``:
    each test loads its own, and forgets it afterwards."""
    saved_path = list(sys.path)
    saved_modules = set(sys.modules)
    yield
    sys.path[:] = saved_path
    for name in set(sys.modules) - saved_modules:
        del sys.modules[name]
