"""A test app for dispatch by load: a CPU burner and a short job."""

from __future__ import annotations

import time

from rota import App

app = App()


@app.task(queue="burn", timeout=120)
def burn(seconds: float) -> None:
    """Keep a core busy for ``seconds``."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        sum(range(1000))


@app.task()
def short() -> None:
    """A short job that does I/O."""
    time.sleep(0.01)
