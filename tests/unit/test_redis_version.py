"""Which Redis versions the store refuses (it needs Redis Functions, 7.0)."""

from __future__ import annotations

import pytest

pytest.importorskip("redis")

from rota.stores.redis._conn import too_old


@pytest.mark.parametrize("version", ["6.2.14", "5.0.7", "6.0.0"])
def test_a_server_before_7_0_is_too_old(version: str) -> None:
    assert too_old(version)


@pytest.mark.parametrize("version", ["7.0.0", "7.0.15", "7.2.4", "8.0.2", "10.1"])
def test_7_0_and_later_are_not(version: str) -> None:
    assert not too_old(version)


def test_an_unreadable_version_is_not_refused_here() -> None:
    assert not too_old("")
    assert not too_old("unstable-abc")
