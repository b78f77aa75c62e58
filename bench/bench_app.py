"""The tasks the benchmarks run."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from rota import App

# the peers bench's job bodies, so that both benches' round trips are the same
sys.path.insert(0, str(Path(__file__).resolve().parent / "redis_peers" / "apps"))
import _common

app = App(os.environ.get("ROTA_URL", "sqlite:///bench.db"))


@app.task()
def noop() -> None:
    """Does nothing: measures rota's own overhead."""


@app.task()
def roundtrip() -> None:
    """One Redis round trip of its own: a short job that does I/O, as most
    jobs do (the peers bench's body, ``BENCH_BODY=roundtrip``)."""
    _common.roundtrip()


@app.task()
def stamp() -> float:
    """Returns the time it started, for enqueue-to-start latency."""
    return time.time()


@app.task()
def sleepy(seconds: float) -> None:
    """Sleeps: an I/O-bound job."""
    time.sleep(seconds)
