"""The tasks the benchmarks run."""

from __future__ import annotations

import os
import time

from rota import App

app = App(os.environ.get("ROTA_URL", "sqlite:///bench.db"))


@app.task()
def noop() -> None:
    """Does nothing: measures rota's own overhead."""


@app.task()
def stamp() -> float:
    """Returns the time it started, for enqueue-to-start latency."""
    return time.time()


@app.task()
def sleepy(seconds: float) -> None:
    """Sleeps: an I/O-bound job."""
    time.sleep(seconds)
