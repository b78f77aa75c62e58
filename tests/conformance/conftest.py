"""The conformance suite runs on every store, MySQL / MariaDB included (the
other tiers run on the backends of tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from backends import available_backends, drop_store, mysql_backends, store_url


@pytest.fixture(params=[*available_backends(), *mysql_backends()])
def backend(request: pytest.FixtureRequest) -> str:
    """The name of each store backend in turn."""
    return str(request.param)


@pytest.fixture
def my_url(tmp_path: Path) -> Iterator[str]:
    """A fresh MySQL store URL (its own database), dropped afterwards."""
    url = store_url("mysql", tmp_path)
    yield url
    drop_store("mysql", url)
