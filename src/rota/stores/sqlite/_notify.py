"""Wake-ups for SQLite waiters: instant within a process, a short poll across processes."""

from __future__ import annotations

import threading
from collections.abc import Callable

_conditions: dict[str, threading.Condition] = {}
_guard = threading.Lock()


def condition_for(path: str) -> threading.Condition:
    """The condition every store of this process on ``path`` shares."""
    with _guard:
        cond = _conditions.get(path)
        if cond is None:
            cond = _conditions[path] = threading.Condition()
        return cond


def notify(path: str) -> None:
    """Wake every waiter of this process on ``path``."""
    cond = condition_for(path)
    with cond:
        cond.notify_all()


def wait(path: str, timeout: float, changed: Callable[[], bool], poll: float = 0.004) -> None:
    """Return when notified in-process, when ``changed()`` reports another
    process committed, or after ``timeout`` seconds."""
    cond = condition_for(path)
    remaining = timeout
    with cond:
        while remaining > 0:
            step = min(poll, remaining)
            if cond.wait(step):
                return
            remaining -= step
            if changed():
                return
