"""A test app for what a worker prints per job and for stuck threads."""

from __future__ import annotations

import time

from rota import App

app = App()


@app.task()
def ok(n: int) -> int:
    """Succeeds at once."""
    return n


@app.task(retries=1, backoff=(0.05, 0.1))
def boom() -> None:
    """Fails every attempt with a two-line error."""
    raise ValueError("boom\nsecond line")


@app.task(timeout=1.0)
def sleeper(seconds: float) -> str:
    """Sleeps past its timeout: Python cannot stop the thread."""
    time.sleep(seconds)
    return "woke"
