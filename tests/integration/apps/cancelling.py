"""A test app for cancelling running jobs in every worker mode."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

from rota import App, current_job

app = App()


@app.task()
def cooperative(seconds: float) -> str:
    """Loops at check points until cancelled (or ``seconds`` pass)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        current_job().check_cancelled()
        time.sleep(0.02)
    return "not cancelled"


@app.task()
def polite(marker: str, seconds: float) -> str:
    """Writes ``marker`` from its ``on_cancel`` callback and stops once
    ``current_job().cancelled`` says so (or ``seconds`` pass)."""
    ctx = current_job()
    ctx.on_cancel(lambda: Path(marker).write_text(ctx.id))
    deadline = time.monotonic() + seconds
    while not ctx.cancelled and time.monotonic() < deadline:
        time.sleep(0.02)
    return "stopped" if ctx.cancelled else "not cancelled"


@app.task(timeout=1)
def polite_timed(marker: str, seconds: float) -> str:
    """:func:`polite` with a timeout of 1 s; writes ``stopped`` to
    ``marker``.end once it stopped for its cancel signal."""
    result = polite(marker, seconds)
    Path(f"{marker}.end").write_text("stopped" if result == "stopped" else result)
    return result


async def _sleep_noting_cancel(marker: str, seconds: float) -> str:
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        Path(marker).write_text("CancelledError")
        raise
    return "woke"


@app.task()
async def anoting(marker: str, seconds: float) -> str:
    """Sleeps ``seconds``; writes ``CancelledError`` to ``marker`` if cancelled."""
    return await _sleep_noting_cancel(marker, seconds)


@app.task(timeout=1)
async def anoting_timed(marker: str, seconds: float) -> str:
    """:func:`anoting` with a timeout of 1 s."""
    return await _sleep_noting_cancel(marker, seconds)


@app.task()
async def asleep(seconds: float) -> str:
    """An ``async def`` task that sleeps ``seconds``."""
    await asyncio.sleep(seconds)
    return "woke"


@app.task()
def sleeper(seconds: float) -> str:
    """Sleeps ``seconds`` without any check point."""
    time.sleep(seconds)
    return "woke"


@app.task()
def pid() -> int:
    """The id of the process that ran the job."""
    return os.getpid()


@app.task()
def marking(marker: str, seconds: float) -> str:
    """Writes ``marker`` as it starts, then sleeps ``seconds``."""
    Path(marker).write_text("started")
    time.sleep(seconds)
    return "woke"
