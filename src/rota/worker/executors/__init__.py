"""Where jobs run: threads (default), child processes, or an asyncio loop.

Every executor gets its jobs through the worker's claim function, which
asks for free slots only (:meth:`Executor.start`). In threads and async
mode the idle slots take turns calling it (``rota.worker.turns``), so the
slot that claims a job runs it; in processes mode one thread of the
parent claims for the children. Each executor calls ``on_done(job,
result)`` from one of its own threads.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rota.errors import InvalidArgument
from rota.worker.executors.base import MODES, Executor, OnDone
from rota.worker.executors.coroutines import AsyncExecutor
from rota.worker.executors.processes import ProcessExecutor, died
from rota.worker.executors.threads import ThreadExecutor

if TYPE_CHECKING:
    from rota.app import App


def make_executor(
    mode: str, app: App, size: int, on_done: OnDone, app_spec: str | None = None
) -> Executor:
    """The executor for a worker ``mode``: threads, processes or async."""
    if mode == "threads":
        return ThreadExecutor(app, size, on_done)
    if mode == "processes":
        return ProcessExecutor(app, size, on_done, app_spec)
    if mode == "async":
        return AsyncExecutor(app, size, on_done)
    raise InvalidArgument(f"unknown worker mode {mode!r}; expected one of: {', '.join(MODES)}")


__all__ = [
    "MODES",
    "AsyncExecutor",
    "Executor",
    "OnDone",
    "ProcessExecutor",
    "ThreadExecutor",
    "died",
    "make_executor",
]
