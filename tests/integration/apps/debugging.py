"""A test app for debug mode: a task that always fails, and one that succeeds
on another queue (proof that the workers went on claiming after a pause).

Workers load it as ``debugging.py:app``; tests send through :func:`sender`,
an app on their store with the same tasks and options.
"""

from __future__ import annotations

import time
from typing import Any

from rota import App


def broken(n: int) -> None:
    """Works a little (a varying time, so that failures end apart), then fails."""
    time.sleep(0.02 + (n % 7) * 0.015)
    raise RuntimeError(f"broken deploy (job {n})")


def fine(n: int) -> int:
    """Succeeds at once."""
    return n


OPTIONS: dict[str, dict[str, Any]] = {
    "broken": {"retries": 1, "backoff": (0.05, 0.1)},
    "fine": {"queue": "other"},
}


def _declare(target: App) -> App:
    for fn in (broken, fine):
        target.task(**OPTIONS[fn.__name__])(fn)
    return target


app = _declare(App())


def sender(url: str) -> App:
    """An app on ``url`` with the same tasks, for sending."""
    return _declare(App(url))
