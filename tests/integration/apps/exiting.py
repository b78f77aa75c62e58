"""A test app that appends "exit pid" to $ROTA_TEST_LOG when its process exits."""

from __future__ import annotations

import atexit
import os

from rota import App

app = App()


@atexit.register
def _exited() -> None:
    """Stands for what an app flushes at exit (an error reporter's queue, metrics)."""
    with open(os.environ["ROTA_TEST_LOG"], "a") as log:
        log.write(f"exit {os.getpid()}\n")


@app.task()
def work(n: int) -> int:
    """Returns ``n``."""
    return n
