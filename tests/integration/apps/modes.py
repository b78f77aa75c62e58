"""A test app for the worker's execution modes, timeouts and retries."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

from rota import App, Snooze, current_job

app = App(lease=float(os.environ.get("ROTA_TEST_LEASE", "30")))


@app.task(timeout=0.5)
def hang(seconds: float) -> str:
    """Sleeps past its timeout unless ``seconds`` is short."""
    time.sleep(seconds)
    return "woke"


@app.task(timeout=0.5)
async def ahang(seconds: float) -> str:
    """An ``async def`` version of :func:`hang`."""
    await asyncio.sleep(seconds)
    return "woke"


@app.task()
def pid() -> int:
    """The id of the process that ran the job."""
    return os.getpid()


@app.task(retries=2, backoff=(0.05, 0.2))
def flaky(fail_times: int) -> int:
    """Fails its first ``fail_times`` attempts, then returns the attempt number."""
    attempt = current_job().attempt
    if attempt <= fail_times:
        raise RuntimeError(f"attempt {attempt} fails on purpose")
    return attempt


def _snooze_until(path: str, runs: int) -> list[int]:
    """Note this run's attempt in ``path``; snooze while fewer than ``runs``
    runs are noted."""
    with open(path, "a") as notes:
        notes.write(f"{current_job().attempt}\n")
    attempts = [int(line) for line in Path(path).read_text().split()]
    if len(attempts) < runs:
        raise Snooze(0.05, f"run {len(attempts)} of {runs}")
    return attempts


@app.task()  # no retry: the snoozes must not use any
def snoozy(path: str, runs: int) -> list[int]:
    """Snoozes until its ``runs``-th run, then returns each run's attempt."""
    return _snooze_until(path, runs)


@app.task()
async def asnoozy(path: str, runs: int) -> list[int]:
    """An ``async def`` version of :func:`snoozy`."""
    return _snooze_until(path, runs)


@app.task()
def exits(code: int) -> None:
    """Raises SystemExit, as ``sys.exit(code)`` in a script the task calls does."""
    raise SystemExit(code)


@app.task(timeout=30)
async def aexits(code: int) -> None:
    """An ``async def`` version of :func:`exits` (with a timeout: a coroutine
    that asyncio runs as a task of its own)."""
    await asyncio.sleep(0)
    raise SystemExit(code)


@app.task()
def interrupted() -> None:
    """Raises KeyboardInterrupt, as a library's Ctrl-C handling may."""
    raise KeyboardInterrupt("from the task")


@app.task()
def crash() -> None:
    """Kills the process running it, as a segfaulting extension would."""
    os._exit(3)


@app.task()
def gated(path: str) -> str:
    """Creates ``path``.started, then waits (at most 60 s) until the file
    ``path`` exists."""
    open(f"{path}.started", "a").close()
    deadline = time.monotonic() + 60
    while not os.path.exists(path) and time.monotonic() < deadline:
        time.sleep(0.01)
    return "opened"


def _tick(path: str) -> None:
    with open(path, "a") as ticks:
        ticks.write(f"{os.getpid()} {time.time():.3f}\n")


@app.task()
def ticking(path: str) -> None:
    """Appends "pid time" to ``path`` every 50 ms, for at most 60 s."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        _tick(path)
        time.sleep(0.05)


@app.task()
def polite_ticking(path: str) -> None:
    """:func:`ticking` that stops when asked, and writes ``stopped`` to
    ``path.end`` then."""
    job = current_job()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not job.cancelled:
        _tick(path)
        time.sleep(0.05)
    Path(f"{path}.end").write_text("stopped" if job.cancelled else "ran out")


@app.task()
async def aticking(path: str) -> None:
    """An ``async def`` version of :func:`ticking`."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        _tick(path)
        await asyncio.sleep(0.05)
