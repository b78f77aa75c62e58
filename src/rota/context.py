"""What a running task can know about its job: :func:`current_job`."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rota.errors import InvalidArgument, JobCancelled

if TYPE_CHECKING:
    from rota.app import App

_current: ContextVar[JobContext | None] = ContextVar("rota_current_job", default=None)

_log = logging.getLogger("rota.worker")


class CancelSignal:
    """Set once when a running job is cancelled; runs the callbacks registered
    with :meth:`add`, each once, in the thread that sets it."""

    def __init__(self) -> None:
        # a flag, not a threading.Event: nothing waits on it, and every job
        # makes one (an Event costs a condition and two locks)
        self._set = False
        self._lock = threading.Lock()
        self._callbacks: list[Callable[[], object]] = []

    def is_set(self) -> bool:
        """Whether the job was cancelled."""
        return self._set

    def set(self) -> None:
        """Mark the job cancelled and run the callbacks (their errors are logged)."""
        with self._lock:
            if self._set:
                return
            self._set = True
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            _run(callback)

    def add(self, callback: Callable[[], object]) -> None:
        """Run ``callback`` when the job is cancelled; at once if it already is."""
        with self._lock:
            if not self._set:
                self._callbacks.append(callback)
                return
        _run(callback)


def _run(callback: Callable[[], object]) -> None:
    try:
        callback()
    except Exception:
        _log.exception("a cancel callback failed")


#: The cancel signal of each attempt running in this process, by its claim's
#: token (a worker stalled past a lease may run two attempts of a job).
_signals: dict[str, CancelSignal] = {}


def track_attempt(token: str, ctx: JobContext) -> None:
    """Let :func:`cancel_running` reach ``ctx``, the context of the attempt
    whose claim holds ``token``, until :func:`untrack_attempt`."""
    _signals[token] = ctx.cancel_signal


def untrack_attempt(token: str) -> None:
    """The attempt whose claim holds ``token`` returned: nothing is left to cancel."""
    _signals.pop(token, None)


def cancel_running(token: str) -> bool:
    """Tell the attempt of this process whose claim holds ``token`` to stop, as
    for a cancel (:attr:`JobContext.cancelled`, its ``on_cancel`` callbacks);
    False if no such attempt runs here."""
    signal = _signals.get(token)
    if signal is None:
        return False
    signal.set()
    return True


@dataclass(slots=True)
class JobContext:
    """The job a task is running for, to be read: the worker makes one per
    attempt (a plain record, not a frozen one, as that costs every job)."""

    id: str
    task: str
    queue: str
    attempt: int
    max_attempts: int
    logger: logging.Logger
    app: App | None = None
    schedule: str | None = None
    fire_time: float | None = None
    #: Seconds the job's lease runs without a renewal (None outside a worker).
    lease: float | None = None

    cancel_signal: CancelSignal = field(default_factory=CancelSignal, repr=False, compare=False)
    #: Where :meth:`log_output` sends the attempt's output (set by the worker).
    log_sink: Callable[[JobContext, str, bytes | str], None] | None = field(
        default=None, repr=False, compare=False
    )

    @property
    def cancelled(self) -> bool:
        """Whether the job was cancelled while it runs, its lease was lost
        (the job went back to its queue), or, in threads mode, it ran past its
        ``timeout``: a task that loops should stop (or call
        :meth:`check_cancelled` at its check points)."""
        return self.cancel_signal.is_set()

    def check_cancelled(self) -> None:
        """Raise :class:`rota.errors.JobCancelled` if the job was cancelled
        (or asked to stop, as :attr:`cancelled` says)."""
        if self.cancel_signal.is_set():
            raise JobCancelled(self.id)

    def on_cancel(self, callback: Callable[[], object]) -> None:
        """Run ``callback`` (from a worker thread) once if the job is cancelled
        (or asked to stop, as :attr:`cancelled` says) while it runs; at once if
        it already was."""
        self.cancel_signal.add(callback)

    def log_output(self, stream: str, data: bytes | str) -> None:
        """Keep ``data`` written on ``stream`` (``stdout`` or ``stderr``) in this
        attempt's log; bytes are decoded as UTF-8 (a character split between
        two writes is kept whole). Without a worker, nothing."""
        if stream not in ("stdout", "stderr"):
            raise InvalidArgument(f"log_output's stream must be stdout or stderr, not {stream!r}")
        if self.log_sink is not None:
            self.log_sink(self, stream, data)


def current_context() -> JobContext | None:
    """The context of the job the calling code runs for, or None."""
    return _current.get()


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
