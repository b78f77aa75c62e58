"""Counting the fsync and fdatasync calls of processes with strace: what a
commit costs the disk, seen where the kernel sees it."""

from __future__ import annotations

import os
import select
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from backends import IN_CI

#: The calls counted.
SYNC_CALLS = "trace=fsync,fdatasync"


def require_strace(attach: bool = False) -> None:
    """Skip (fail in CI) without strace, or without root where ``attach``
    (tracing another user's process, a database server's)."""
    reason = ""
    if shutil.which("strace") is None:
        reason = "strace is missing"
    elif attach and os.geteuid() != 0:
        reason = "attaching strace to the database server's processes needs root"
    if reason:
        if IN_CI:
            pytest.fail(f"{reason} (CI=true: must not skip)")
        pytest.skip(reason)


def count_syncs(lines: list[str]) -> int:
    """The sync calls among strace's output lines."""
    return sum(1 for line in lines if "sync(" in line)


@contextmanager
def syncs_of(pids: list[int], trace: Path) -> Iterator[list[int]]:
    """Trace the processes ``pids`` while the block runs; the yielded list
    then holds the number of their sync calls."""
    command = ["strace", "-f", "-e", SYNC_CALLS, "-o", str(trace)]
    for pid in pids:
        command += ["-p", str(pid)]
    tracer = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    counted: list[int] = []
    try:
        assert tracer.stderr is not None
        attached, deadline = 0, time.monotonic() + 10
        while attached < len(pids):  # strace says so for each, once it traces it
            left = deadline - time.monotonic()
            ready = select.select([tracer.stderr], [], [], max(left, 0))[0]
            line = tracer.stderr.readline() if ready else ""
            if not line:
                pytest.fail(f"strace did not attach to {pids} within 10 s")
            attached += "attached" in line
        yield counted
    finally:
        tracer.terminate()
        tracer.wait(timeout=10)
    counted.append(count_syncs(trace.read_text().splitlines()))
