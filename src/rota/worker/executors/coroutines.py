"""Async mode: slots that are coroutines on one asyncio loop."""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import queue
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rota.context import set_current
from rota.errors import CorruptJob, JobCancelled, UnknownTask
from rota.models import ClaimedJob
from rota.worker import runner
from rota.worker.executors.base import Executor, OnDone
from rota.worker.runner import Result
from rota.worker.turns import BATON, Claim, claim_safely

if TYPE_CHECKING:
    from rota.app import App


_Call = tuple["concurrent.futures.Future[Any]", Callable[..., Any], tuple[Any, ...], dict[str, Any]]


class _DaemonThread(concurrent.futures.Executor):
    """One daemon thread that runs the calls submitted to it, in turn: a claim
    that waits out a store outage does not hold up the process's exit, as
    the thread of a ``ThreadPoolExecutor``, joined at exit, would."""

    def __init__(self, name: str) -> None:
        self._calls: queue.SimpleQueue[_Call | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def submit(
        self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any
    ) -> concurrent.futures.Future[Any]:
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self._calls.put((future, fn, args, kwargs))
        return future

    def _run(self) -> None:
        while (call := self._calls.get()) is not None:
            future, fn, args, kwargs = call
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(fn(*args, **kwargs))
            except BaseException as exc:
                future.set_exception(exc)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self._calls.put(None)
        if wait:
            self._thread.join()


class AsyncExecutor(Executor):
    """One asyncio loop in a thread, with ``size`` slots on it: ``async def``
    tasks run on the loop, with real cancellation at their timeout; plain
    functions run in the loop's thread pool. The slots take turns at the
    claim as threads do; the claim itself runs off the loop, in a thread of
    its own."""

    def __init__(self, app: App, size: int, on_done: OnDone) -> None:
        super().__init__(app, size, on_done)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="rota-async", daemon=True
        )
        self._claimer = _DaemonThread("rota-claim")
        self._claim: Claim | None = None
        self._claiming = threading.Lock()  # held by the claim under way
        # The rest belongs to the loop's thread:
        self._waiting: asyncio.Queue[ClaimedJob | object] = asyncio.Queue()
        self._leading = False  # a slot holds the claim
        self._slots: list[asyncio.Task[None]] = []
        self._tasks: dict[asyncio.Task[None], ClaimedJob] = {}
        self._cancelled: set[str] = set()  # tokens of the jobs cancelled

    def start(self, claim: Claim) -> None:
        self._claim = claim
        self._thread.start()
        self._loop.call_soon_threadsafe(self._start_slots)

    def _start_slots(self) -> None:
        self._slots = [self._loop.create_task(self._slot()) for _ in range(self.size)]

    def stop_claiming(self, timeout: float | None = None) -> None:
        self._claim = None
        if self._claiming.acquire(timeout=-1 if timeout is None else timeout):
            self._claiming.release()

    def take_waiting(self) -> list[ClaimedJob]:
        if not self._thread.is_alive():
            return []
        return asyncio.run_coroutine_threadsafe(self._take_waiting(), self._loop).result(5)

    async def _take_waiting(self) -> list[ClaimedJob]:
        taken = []
        while not self._waiting.empty():
            item = self._waiting.get_nowait()
            if isinstance(item, ClaimedJob):
                taken.append(item)
        return taken

    def cancel(self, job: ClaimedJob) -> None:
        self._loop.call_soon_threadsafe(self._cancel, job)

    def _cancel(self, job: ClaimedJob) -> None:
        for task, running in self._tasks.items():
            if running is job:
                self._cancelled.add(job.token)
                task.cancel()

    async def _slot(self) -> None:
        """Run jobs, each in a task of its own, one at a time, until stopped."""
        while (job := await self._next()) is not None:
            if not self.may_start(job):
                continue
            task = self._loop.create_task(self._run(job))
            self._tasks[task] = job
            try:
                await task
            except asyncio.CancelledError:
                if current_task(self._loop).cancelling():
                    raise  # the slot is stopped
                # the job was cancelled before it began
                self._cancelled.discard(job.token)
                self.on_done(job, runner.failure(JobCancelled(job.id), retryable=False))
            finally:
                del self._tasks[task]

    async def _next(self) -> ClaimedJob | None:
        """The next job for the calling slot, claimed by it (when no other slot
        holds the claim) or left for it; None once the worker claims no more."""
        while True:
            if not self._waiting.empty():
                item = self._waiting.get_nowait()
            elif not self._leading:
                self._leading = True
                try:
                    jobs = await self._loop.run_in_executor(self._claimer, self._claim_turn)
                finally:
                    self._leading = False
                if jobs:
                    for other in jobs[1:]:
                        self._waiting.put_nowait(other)
                    self._waiting.put_nowait(BATON)  # the next idle slot claims meanwhile
                    return jobs[0]
                if jobs is None:
                    return None
                continue  # the claim waited a while for work: claim again
            else:
                item = await self._waiting.get()
            if isinstance(item, ClaimedJob):
                return item

    def _claim_turn(self) -> list[ClaimedJob] | None:
        with self._claiming:
            return claim_safely(self._claim)

    async def _run(self, job: ClaimedJob) -> None:
        try:
            result = await self._attempt(job)
        except asyncio.CancelledError:
            if job.token not in self._cancelled:
                return  # stopped: the worker releases the job
            self._cancelled.discard(job.token)
            result = runner.failure(JobCancelled(job.id), retryable=False)
        except BaseException as exc:  # a task's SystemExit too: the loop lives on
            result = runner.internal_failure(exc, "the async executor")
        self.on_done(job, result)

    async def _attempt(self, job: ClaimedJob) -> Result:
        try:
            fn, args, kwargs, ctx = runner.prepare(self.app, job)
        except (UnknownTask, CorruptJob) as exc:
            return runner.refusal(job, exc)
        token = set_current(ctx)
        try:
            if inspect.iscoroutinefunction(fn):
                call = runner.contained(fn(*args, **kwargs))
                value = await asyncio.wait_for(call, job.timeout)
            else:
                value = await runner.contained(asyncio.to_thread(fn, *args, **kwargs))
            return runner.encode(value)
        except TimeoutError:
            return runner.failure(runner.timed_out(job, "cancelled"))
        except runner.TaskExit as exc:  # the task's SystemExit: a failure like any other
            return runner.failure(exc.exc)
        except Exception as exc:
            return runner.failure(exc)
        finally:
            runner.end_attempt(job, ctx, token)

    def stop(self) -> None:
        async def cancel_all() -> None:
            tasks = [*self._slots, *self._tasks]
            for task in tasks:
                task.cancel()
            if tasks:  # let them end (a task that ignores it is left behind)
                await asyncio.wait(tasks, timeout=1.0)
            self._loop.stop()

        asyncio.run_coroutine_threadsafe(cancel_all(), self._loop)
        self._thread.join(5)
        self._claimer.shutdown(wait=False)


def current_task(loop: asyncio.AbstractEventLoop) -> asyncio.Task[object]:
    """The task running on ``loop`` now (called from one)."""
    task = asyncio.current_task(loop)
    assert task is not None
    return task


__all__ = ["AsyncExecutor"]
