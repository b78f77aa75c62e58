"""A test app whose worker hooks and task append "event pid" lines to $ROTA_TEST_LOG."""

from __future__ import annotations

import os

from rota import App

app = App()


def _note(event: str) -> None:
    with open(os.environ["ROTA_TEST_LOG"], "a") as log:
        log.write(f"{event} {os.getpid()}\n")


@app.on_worker_start
def opened() -> None:
    """Stands for a per-process resource being opened."""
    _note("start")


@app.on_worker_stop
def closed() -> None:
    """Stands for that resource being closed."""
    _note("stop")


@app.task()
def work(n: int) -> int:
    """Note the process that ran the job."""
    _note("job")
    return n
