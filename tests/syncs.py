"""Counting the fsync and fdatasync calls of a process with strace: what a
commit costs the disk, seen where the kernel sees it."""

from __future__ import annotations

import shutil

import pytest

from backends import IN_CI

#: The calls counted (an ``strace -e`` expression).
SYNC_CALLS = "trace=fsync,fdatasync"


def require_strace() -> None:
    """Skip without strace (fail in CI)."""
    if shutil.which("strace") is None:
        if IN_CI:
            pytest.fail("strace is missing (CI=true: must not skip)")
        pytest.skip("strace is missing")
