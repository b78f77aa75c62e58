"""The conformance suite runs on every store, MySQL / MariaDB included (the
other tiers run on the backends of tests/conftest.py)."""

from __future__ import annotations

import pytest

from backends import available_backends, mysql_backends


@pytest.fixture(params=[*available_backends(), *mysql_backends()])
def backend(request: pytest.FixtureRequest) -> str:
    """The name of each store backend in turn."""
    return str(request.param)
