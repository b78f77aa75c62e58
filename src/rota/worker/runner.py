"""Running one claimed job: decode, call the task, encode the outcome.

Used by every executor, in the worker process or in a child process.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import logging
import random
import threading
import traceback
from dataclasses import dataclass
from signal import SIGINT, default_int_handler, getsignal
from typing import TYPE_CHECKING, Any

from rota import _json, _payload
from rota._time import format_duration
from rota.context import (
    CancelSignal,
    JobContext,
    reset_current,
    set_current,
    track_attempt,
    untrack_attempt,
)
from rota.errors import CorruptJob, JobCancelled, JobTimeout, Snooze, UnknownTask
from rota.models import ClaimedJob, Outcome
from rota.retry import RetryPolicy, error_kind
from rota.worker import joblogs

if TYPE_CHECKING:
    from rota.app import App

log = logging.getLogger("rota.task")
_task_logger = functools.cache(log.getChild)  # one lookup per task name
_worker_log = logging.getLogger("rota.worker")


@dataclass(slots=True)
class Result:
    """What one attempt produced, before it becomes an :class:`Outcome`."""

    ok: bool
    result: bytes | None = None
    error: str | None = None
    traceback: str | None = None
    retryable: bool = True
    #: The attempt failed on an error of the worker's own, not of the task.
    internal: bool = False
    #: The error's classes, most derived first, as ``module.qualname``.
    kinds: tuple[str, ...] = ()
    #: The task raised :class:`~rota.errors.Snooze`: run again in that many seconds.
    snooze: float | None = None


def prepare(app: App, job: ClaimedJob) -> tuple[Any, list[Any], dict[str, Any], JobContext]:
    """Look up the task and decode the arguments; raises :class:`UnknownTask`
    or :class:`CorruptJob`."""
    task = app.get_task(job.task)
    args, kwargs = _payload.decode(job.id, job.payload)
    ctx = JobContext(
        id=job.id,
        task=job.task,
        queue=job.queue,
        attempt=job.attempt,
        max_attempts=job.max_attempts,
        logger=_task_logger(job.task),
        app=app,
        schedule=job.schedule,
        fire_time=job.fire_time,
        lease=job.lease,
        log_sink=joblogs.write,
    )
    track_attempt(job.token, ctx)
    return task.fn, args, kwargs, ctx


def end_attempt(job: ClaimedJob, ctx: JobContext, current: object) -> None:
    """Undo what :func:`prepare` and ``set_current`` (which returned ``current``)
    set up, and store the rest of the attempt's log: call once the task returned."""
    reset_current(current)
    untrack_attempt(job.token)
    joblogs.end(ctx)


def refusal(job: ClaimedJob, exc: UnknownTask | CorruptJob) -> Result:
    """A final failure for a job that cannot run at all; logged as an error,
    but for a task this worker does not know (see :func:`awaiting_task`)."""
    if not isinstance(exc, UnknownTask):
        _worker_log.error("job %s (%s) cannot run: %s", job.id, job.task, exc)
    return failure(exc, retryable=False)


#: How long a job of a task its worker does not know waits for a worker that
#: knows it (one of newer code, in a rolling deploy) before it fails, in
#: seconds from its send; and how often it is tried again meanwhile.
UNKNOWN_TASK_PATIENCE = 600.0
UNKNOWN_TASK_RETRY = 10.0
_UNKNOWN_TASK = error_kind(UnknownTask)
_awaited_tasks: set[str] = set()  # the unknown tasks this process said it waits for


def awaiting_task(job: ClaimedJob, result: Result) -> Result:
    """``result``, or, for a job whose task this worker does not know sent
    less than :data:`UNKNOWN_TASK_PATIENCE` before its claim, a snooze: the
    job waits for a worker that knows its task, its attempt not counted.

    Both times are the store's (a claim's ``started_at``), so a worker whose
    own clock is off neither fails such jobs early nor keeps them late."""
    if result.kinds[:1] != (_UNKNOWN_TASK,):
        return result
    if job.started_at - job.enqueued_at >= UNKNOWN_TASK_PATIENCE:
        _worker_log.error(
            "job %s cannot run: no worker that claimed it in %s knew task %r",
            job.id,
            format_duration(UNKNOWN_TASK_PATIENCE),
            job.task,
        )
        return result
    if job.task not in _awaited_tasks:  # said once per task: its jobs come back every few s
        _awaited_tasks.add(job.task)
        _worker_log.warning(
            "task %r is not registered in this worker: its jobs wait for a worker that has "
            "it, %s at a time, each failing %s after its send (the workers of a queue "
            "should all have its tasks: give the task a queue of its own, or start this "
            "worker with them)",
            job.task,
            format_duration(UNKNOWN_TASK_RETRY),
            format_duration(UNKNOWN_TASK_PATIENCE),
        )
    error = f"{result.error} (waiting for a worker that has it)"
    return Result(False, error=error, retryable=False, snooze=UNKNOWN_TASK_RETRY)


def failure(exc: BaseException, *, retryable: bool = True) -> Result:
    """A failed attempt from an exception, with its formatted traceback."""
    text = joblogs.storable("".join(traceback.format_exception(exc)))
    error = joblogs.storable(f"{type(exc).__name__}: {exc}")
    kinds = tuple(error_kind(cls) for cls in type(exc).__mro__)
    snooze = exc.seconds if isinstance(exc, Snooze) else None
    return Result(
        False, error=error, traceback=text, retryable=retryable, kinds=kinds, snooze=snooze
    )


#: What a task may raise that is no :class:`Exception`, and fails its attempt
#: as any error does: its own ``sys.exit()`` or ``raise KeyboardInterrupt``.
TASK_EXITS = (SystemExit, KeyboardInterrupt)


class TaskExit(Exception):
    """A task's :data:`TASK_EXITS` exception, carried through asyncio as an
    ordinary one (:func:`contained`): let out of a coroutine, it would stop
    the event loop running it."""

    def __init__(self, exc: BaseException) -> None:
        super().__init__(exc)
        self.exc = exc


async def contained(awaitable: Any) -> Any:
    """Await ``awaitable``; a :data:`TASK_EXITS` exception comes out as :class:`TaskExit`."""
    try:
        return await awaitable
    except TASK_EXITS as exc:
        raise TaskExit(exc) from None


def may_be_ctrl_c(exc: BaseException) -> bool:
    """Whether ``exc``, caught from a task, may be a Ctrl-C rather than the
    task's own: a KeyboardInterrupt in the main thread of a process where
    SIGINT raises one (inline mode in a test run). Never in a worker: its
    slots are other threads, it takes SIGINT as a stop request, and its
    child processes let SIGINT pass."""
    return (
        isinstance(exc, KeyboardInterrupt)
        and threading.current_thread() is threading.main_thread()
        and getsignal(SIGINT) is default_int_handler
    )


def timed_out(job: ClaimedJob, how: str = "") -> JobTimeout:
    """The error of an attempt of ``job`` that ran past its timeout, worded
    the same whatever the store and the mode (``timed out after 1 s``, then
    ``; how`` it was stopped, when given)."""
    return JobTimeout(f"timed out after {job.timeout:g} s" + (f"; {how}" if how else ""))


def internal_failure(exc: BaseException, where: str) -> Result:
    """The final failure of an attempt that the worker's own code (``where``)
    could not finish; logged with its traceback. Never raises, even for an
    exception that cannot be formatted."""
    _worker_log.error("%s survived an unexpected error", where, exc_info=exc)
    try:
        error = joblogs.storable(f"internal error in {where}: {type(exc).__name__}: {exc}")
        text: str | None = joblogs.storable("".join(traceback.format_exception(exc)))
    except Exception:
        error, text = f"internal error in {where}: {type(exc).__name__} (unprintable)", None
    return Result(False, error=error, traceback=text, retryable=False, internal=True)


def encode(value: Any) -> Result:
    """A successful attempt, or a failed one that is not retried when the return
    value is not exact JSON (the :class:`SerializationError` names the bad value)."""
    try:
        return Result(True, result=_json.dumps(value, what="task result", root="result"))
    except Exception as exc:
        return failure(exc, retryable=False)


def run_sync(app: App, job: ClaimedJob) -> Result:
    """Run a job's task in the calling thread. A coroutine gets a loop of its
    own and is cancelled when the job's cancel signal is set (a cancel, or in
    threads mode its timeout); a cancelled job's attempt then ends as
    :class:`JobCancelled`, not retried. A task's ``SystemExit`` or
    ``KeyboardInterrupt`` fails its attempt as any error would (unless it
    :func:`may_be_ctrl_c`: then it goes on up)."""
    try:
        fn, args, kwargs, ctx = prepare(app, job)
    except (UnknownTask, CorruptJob) as exc:
        return refusal(job, exc)
    token = set_current(ctx)
    try:
        value = fn(*args, **kwargs)
        if value is not None and inspect.isawaitable(value):
            value = asyncio.run(_await(value, ctx.cancel_signal))
    except asyncio.CancelledError as exc:
        if not ctx.cancelled:
            return failure(exc)  # the task's own: a failure like any other
        return failure(JobCancelled(job.id), retryable=False)
    except TaskExit as exc:
        return failure(exc.exc)
    except TASK_EXITS as exc:
        if may_be_ctrl_c(exc):
            raise
        return failure(exc)
    except Exception as exc:
        return failure(exc)
    finally:
        end_attempt(job, ctx, token)
    return encode(value)


async def _await(awaitable: Any, signal: CancelSignal) -> Any:
    """Await ``awaitable`` in a task that ``signal`` cancels, from any thread."""
    task = asyncio.current_task()
    loop = asyncio.get_running_loop()
    assert task is not None

    def cancel() -> None:
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nothing to stop
            loop.call_soon_threadsafe(task.cancel)

    signal.add(cancel)
    return await contained(awaitable)


def to_outcome(job: ClaimedJob, result: Result) -> Outcome:
    """The report for the store, with a backoff delay when a retry may follow
    (by the retry policy the job carries); a snooze waits what it asked."""
    if result.ok:
        return Outcome(job.id, job.token, True, result=result.result)
    if result.snooze is not None:
        return Outcome(
            job.id, job.token, False, error=result.error, retry_in=result.snooze, snooze=True
        )
    retry_in, error = None, result.error
    if result.retryable:
        policy = RetryPolicy.decode(job.retry)
        why = policy.refusal(result.kinds)
        if why is None:
            retry_in = policy.delay(job.attempt - job.lost, random.random())
        elif job.max_attempts > 1:
            kind = result.kinds[0].rpartition(".")[2] if result.kinds else "the error"
            error = f"{error} (not retried: {kind} is {why})"
    return Outcome(
        job.id,
        job.token,
        False,
        error=error,
        traceback=result.traceback,
        retry_in=retry_in,
        kinds=result.kinds,
    )
