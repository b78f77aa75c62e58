"""What a running task can know about its job: :func:`current_job`."""

from __future__ import annotations

import logging
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rota.app import App

_current: ContextVar[JobContext | None] = ContextVar("rota_current_job", default=None)


@dataclass(frozen=True, slots=True)
class JobContext:
    """The job a task is running for."""

    id: str
    task: str
    queue: str
    attempt: int
    max_attempts: int
    logger: logging.Logger
    app: App | None = None
    schedule: str | None = None
    fire_time: float | None = None


def current_job() -> JobContext:
    """The context of the job the calling task runs for.

    Raises ``RuntimeError`` outside a task run by a rota worker or by
    ``rota.testing.inline``.
    """
    ctx = _current.get()
    if ctx is None:
        raise RuntimeError(
            "current_job() is only available inside a task run as a job (by a rota worker); "
            "calling the task function directly runs no job: in tests, send it under "
            "`with rota.testing.inline(app):` to run it as a job in the calling thread"
        )
    return ctx


def set_current(ctx: JobContext | None) -> object:
    """Install ``ctx`` for the running code; returns a token for :func:`reset_current`."""
    return _current.set(ctx)


def reset_current(token: object) -> None:
    """Undo :func:`set_current`."""
    _current.reset(token)  # type: ignore[arg-type]
