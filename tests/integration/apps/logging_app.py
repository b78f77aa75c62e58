"""A test app whose tasks write output: prints, logger lines, stderr."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

from rota import App, current_job

app = App(job_log_cap=int(os.environ.get("ROTA_TEST_LOG_CAP", str(256 * 1024))))


@app.task(retries=1, backoff=(0.05, 0.1))
def chatty(fail_first: bool) -> str:
    """Prints a line, logs a line, writes to stderr; fails its first attempt if asked."""
    job = current_job()
    print(f"printed by attempt {job.attempt}")
    job.logger.info("logged by attempt %d", job.attempt)
    sys.stderr.write(f"stderr of attempt {job.attempt}\n")
    if fail_first and job.attempt == 1:
        raise RuntimeError("first attempt fails on purpose")
    return "done"


@app.task()
async def achatty() -> str:
    """The async version: prints and logs inside a coroutine."""
    print("printed by a coroutine")
    current_job().logger.warning("logged by a coroutine")
    await asyncio.sleep(0)
    return "done"


@app.task()
def flood(lines: int) -> int:
    """Prints ``lines`` numbered lines of 20 bytes each."""
    for i in range(lines):
        print(f"line {i:014d}")
    return lines


@app.task()
def slow(gate: str) -> str:
    """Prints a line, then waits for the file ``gate`` (bounded), then prints another."""
    print("before the gate", flush=True)
    deadline = time.monotonic() + 30
    while not Path(gate).exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    print("after the gate")
    return "done"


shout = app.command("shout", ["sh", "-c", "echo out line; echo err line >&2; printf 'no newline'"])


@app.task()
def nul() -> str:
    """Prints a NUL and fails with one in its message."""
    print("before\0after")
    raise ValueError("bad\0byte")


nul_command = app.command(
    "nul_command", ["sh", "-c", "printf 'out\\0put\\n'; printf 'err\\0or' >&2; exit 3"]
)
