"""Where jobs run: threads (default), child processes, or an asyncio loop.

Every executor gets its jobs through the worker's claim function, which
asks for free slots only (:meth:`Executor.start`). In threads and async
mode the idle slots take turns calling it (``rota.worker.turns``), so the
slot that claims a job runs it; in processes mode one thread of the
parent claims for the children. Each executor calls ``on_done(job,
result)`` from one of its own threads.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextlib
import inspect
import logging
import multiprocessing
import queue
import signal
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any

from rota.commands import COMMAND_TASK, end_groups, stop_groups_under
from rota.context import set_current
from rota.errors import CorruptJob, InvalidArgument, JobCancelled, JobTimeout, UnknownTask
from rota.models import ClaimedJob
from rota.worker import joblogs, runner
from rota.worker.runner import Result
from rota.worker.turns import BATON, PACE, Claim, Turns, claim_safely

if TYPE_CHECKING:
    from multiprocessing.context import BaseContext
    from multiprocessing.process import BaseProcess

    from rota.app import App

log = logging.getLogger("rota.worker")

OnDone = Callable[[ClaimedJob, Result], None]
#: Whether a job handed to a slot may still start (False: its lease ran out
#: while it waited, and the job is dropped unrun).
MayStart = Callable[[ClaimedJob], bool]
MODES = ("threads", "processes", "async")


class Executor(ABC):
    """Runs jobs in ``size`` slots and reports each result through ``on_done``."""

    def __init__(self, app: App, size: int, on_done: OnDone) -> None:
        self.app = app
        self.size = size
        self.on_done = on_done
        self.may_start: MayStart = lambda job: True
        #: Whether the worker's jobs are short now (see rota.worker.ahead).
        self.short_jobs: Callable[[], bool] = lambda: False

    @abstractmethod
    def start(self, claim: Claim) -> None:
        """Start the slots, fed by calls of ``claim`` (see the module docstring)."""

    @abstractmethod
    def stop_claiming(self, timeout: float | None = None) -> None:
        """Claim no more; return once a claim under way has returned, or after
        ``timeout`` seconds (None: no limit; a claim may wait out a store
        outage)."""

    @abstractmethod
    def take_waiting(self) -> list[ClaimedJob]:
        """Take back the claimed jobs no slot has started (the worker releases
        them at shutdown)."""

    @abstractmethod
    def stop(self) -> None:
        """Stop the slots, and the jobs still running as far as this executor
        can (child processes killed, async tasks cancelled; a thread runs
        on): the worker releases those jobs once this returns."""

    def busy(self) -> int:
        """Slots occupied, including ones whose job timed out but has not returned
        and kept its slot (see :meth:`abandon`)."""
        return 0

    def abandon(self, job: ClaimedJob) -> bool:
        """Give the slot of ``job``, which timed out but cannot be stopped, to a
        fresh runner; True if done. The default: False (this executor stops its
        jobs at their timeout)."""
        return False

    def stuck(self) -> int:
        """Abandoned jobs still running on runners of their own."""
        return 0

    def cancel(self, job: ClaimedJob) -> None:
        """Stop the running ``job``, which was cancelled, as far as this executor
        can. The default: nothing (threads stop cooperatively, through
        ``current_job().cancelled``)."""
        return None


class ThreadExecutor(Executor):
    """A pool of ``size`` threads: for I/O-bound tasks. Timeouts are reported at
    the deadline, but Python cannot stop a thread: the worker asks the task to
    stop (its context reads cancelled, as for a cancel) and abandons the job
    (:meth:`abandon`), a fresh thread takes its slot, and the stuck thread
    ends once the task returns. At most ``size`` threads are stuck at once;
    beyond that a timed-out job keeps its slot until it returns."""

    def __init__(self, app: App, size: int, on_done: OnDone) -> None:
        super().__init__(app, size, on_done)
        self._turns = Turns(pace=PACE, short=lambda: self.short_jobs())
        self._threads = [self._thread(i) for i in range(size)]
        self._busy = 0  # slots running a job
        self._lock = threading.Lock()
        self._running: set[str] = set()  # tokens of the jobs being run
        self._replaced: set[str] = set()  # tokens of abandoned jobs whose slot moved on
        self._spawned = size

    def start(self, claim: Claim) -> None:
        self._turns.open(claim)
        for thread in self._threads:
            thread.start()

    def stop_claiming(self, timeout: float | None = None) -> None:
        self._turns.close(timeout)

    def take_waiting(self) -> list[ClaimedJob]:
        return self._turns.take_waiting()

    def busy(self) -> int:
        return self._busy + self._turns.waiting

    def stuck(self) -> int:
        return len(self._replaced)

    def abandon(self, job: ClaimedJob) -> bool:
        with self._lock:
            if job.token not in self._running or len(self._replaced) >= self.size:
                return False
            self._running.discard(job.token)
            self._replaced.add(job.token)
            self._busy -= 1
            self._spawned += 1
            thread = self._thread(self._spawned - 1)
            self._threads = [t for t in self._threads if t.is_alive()] + [thread]
        thread.start()
        return True

    def _thread(self, number: int) -> threading.Thread:
        return threading.Thread(target=self._slot, name=f"rota-slot-{number}", daemon=True)

    def _slot(self) -> None:
        while (job := self._turns.next()) is not None:
            if not self.may_start(job):
                continue
            with self._lock:
                self._running.add(job.token)
                self._busy += 1
            try:
                result = runner.run_sync(self.app, job)
            except BaseException as exc:  # a task's SystemExit too: the slot lives on
                result = runner.internal_failure(exc, "a thread slot")
            finally:
                replaced = self._returned(job)
            if replaced:
                self._turns.leave()
                return  # abandoned: its slot went to a fresh thread, its result is void
            self.on_done(job, result)

    def _returned(self, job: ClaimedJob) -> bool:
        """Free the slot of a job that returned; True if the job was abandoned
        and its slot already given to another thread (this one then ends)."""
        with self._lock:
            if job.token in self._replaced:
                self._replaced.discard(job.token)
                return True
            self._running.discard(job.token)
            self._busy -= 1
            return False

    def stop(self) -> None:
        self._turns.end(len(self._threads))


#: Seconds the idle children of a stopping processes-mode worker get to run
#: their stop hooks and exit, all together, before they are killed (a child
#: still running a job then is killed at once: its job goes back to the queue).
_CHILD_EXIT = 5.0
#: Seconds a new child gets to load the app and run its start hooks: a job's
#: timeout counts from the child's word that it is ready.
_CHILD_START = 60.0
_READY = "ready"


def _let_pass(signum: int, frame: object) -> None:
    """A child's handler of SIGINT and SIGTERM: nothing (see :func:`_child_main`)."""


def _child_main(
    conn: Connection,
    app_spec: str | None,
    app: App | None,
    url: str,
    logs: tuple[int, logging.Formatter | None],
    commands: bool = False,
) -> None:
    """A child process: run jobs sent over ``conn`` until it closes. A spawned
    child logs as its parent does (``logs``: the root level and formatter) and
    runs command-line jobs if its parent does (``commands``). The app's worker
    hooks run here too: the start hooks before the first job, the stop hooks
    as it ends (what a hook opened in the parent is not
    shared with a child). A ``None`` sent in place of a job ends the child.

    Once running, the child lets SIGINT and SIGTERM pass: a Ctrl-C or a
    service manager signals the whole process group, and the parent, not
    the signal, ends the child once its job is done (or kills it after the
    grace). They are caught, not ignored: the commands a job starts get
    them back as their defaults (an ignored signal would stay ignored in
    them, and they could not be stopped but by SIGKILL)."""
    signal.signal(signal.SIGINT, _let_pass)
    signal.signal(signal.SIGTERM, _let_pass)
    if app is None:
        from rota._loader import load_app

        level, formatter = logs
        if formatter is not None:
            handler = logging.StreamHandler()
            handler.setFormatter(formatter)
            logging.basicConfig(level=level, handlers=[handler])

        app = load_app(app_spec or "")
        app.close()
        app.url = url  # the parent's store, even when --url overrode the app's
        if commands:
            app.enable_commands()
    joblogs.install()
    app._worker_started()
    conn.send(_READY)
    try:
        while True:
            try:
                job = conn.recv()
            except (EOFError, KeyboardInterrupt):
                return
            if job is None:
                return
            try:
                result = runner.run_sync(app, job)
            except Exception as exc:
                result = runner.internal_failure(exc, "a child process")
            conn.send(result)
    finally:
        app._worker_stopped()


def died(exitcode: int | None) -> str:
    """How a child process ended, from its exit code (minus the signal's
    number when a signal killed it; None: not known)."""
    if exitcode is None:
        return "died"
    if exitcode >= 0:
        return f"died (exit code {exitcode})"
    try:
        name = f" ({signal.Signals(-exitcode).name})"
    except ValueError:
        name = ""
    return f"was killed by signal {-exitcode}{name}"


def _parent_logs() -> tuple[int, logging.Formatter | None]:
    """The root logger's level and its first handler's formatter, for a child."""
    root = logging.getLogger()
    formatter = next((h.formatter for h in root.handlers if h.formatter is not None), None)
    return root.level, formatter


class _ProcessSlot:
    """One child process and the jobs sent to it, in order: the first is the
    one it runs, the others wait in the pipe."""

    def __init__(self, ctx: BaseContext, app: App, app_spec: str | None) -> None:
        self._ctx = ctx
        self._app = app
        self._spec = app_spec
        self._proc: BaseProcess | None = None
        self._conn: Connection | None = None
        self._guard = threading.Lock()
        self._sent: collections.deque[ClaimedJob] = collections.deque()
        self._cancelled = False  # the first job sent was cancelled
        self._ready = False  # the child said it is ready
        self._groups: list[int] = []  # its commands' process groups, sent SIGTERM

    def _spawn(self) -> tuple[BaseProcess, Connection]:
        parent, child = self._ctx.Pipe()
        inherited = self._app if self._spec is None else None
        proc = self._ctx.Process(  # type: ignore[attr-defined]
            target=_child_main,
            args=(
                child,
                self._spec,
                inherited,
                self._app.url,
                _parent_logs(),
                COMMAND_TASK in self._app.tasks,
            ),
            daemon=True,
        )
        proc.start()
        child.close()
        self._proc, self._conn, self._ready = proc, parent, False
        return proc, parent

    def pending(self) -> int:
        """Jobs sent whose result has not been taken."""
        return len(self._sent)

    def send(self, job: ClaimedJob) -> None:
        """Send ``job`` to the child (started first if there is none); it runs
        once the jobs sent before it are done. A child found dead shows in
        :meth:`result`."""
        conn = self._conn or self._spawn()[1]
        with self._guard:
            self._sent.append(job)
        with contextlib.suppress(OSError):
            conn.send(job)

    def result(self) -> tuple[ClaimedJob, Result, list[ClaimedJob]]:
        """Wait for the result of the first job sent, for at most its timeout
        (counted from here: the child starts it as the previous one returns).
        Returns that job, its result, and the jobs sent after it that the
        child never started when it had to be killed (timed out or
        cancelled) or died."""
        job = self._sent[0]
        proc, conn = self._proc, self._conn
        assert proc is not None and conn is not None
        try:
            if not self._ready and not self._await_ready(conn):
                late = f"the child process did not start within {_CHILD_START:g} s"
                result = runner.failure(RuntimeError(late))
            elif conn.poll(job.timeout):
                result = conn.recv()
                with self._guard:
                    self._sent.popleft()
                    self._cancelled = False
                return job, result, []
            else:
                result = runner.failure(
                    JobTimeout(f"timed out after {job.timeout} s; child process killed")
                )
        except (EOFError, OSError):
            proc.join(1)  # (its exit code, when it ended by itself)
            if self._cancelled:
                result = runner.failure(JobCancelled(job.id), retryable=False)
            else:
                crash = RuntimeError(f"the child process running the job {died(proc.exitcode)}")
                result = runner.failure(crash)
        return job, result, self.kill()[1:]

    def _await_ready(self, conn: Connection) -> bool:
        """Wait for a new child to load the app and run its start hooks; False
        if it did not within :data:`_CHILD_START` seconds."""
        if not conn.poll(_CHILD_START):
            return False
        if conn.recv() != _READY:
            raise RuntimeError("a child process spoke before it said it was ready")
        self._ready = True
        return True

    def stop(self, job: ClaimedJob) -> None:
        """Kill the child if it runs ``job`` (cancelled); :meth:`result` then
        reports the job cancelled, and the next job gets a fresh child."""
        with self._guard:
            proc = self._proc
            if self._sent and self._sent[0] is job and proc is not None:
                self._cancelled = True
                self._groups += stop_groups_under(proc.pid)  # they outlive the child
                proc.kill()

    def end(self) -> None:
        """Ask an idle child to end (its stop hooks run); see :meth:`close`."""
        with self._guard:
            idle = not self._sent
        if self._conn is not None and idle:
            with contextlib.suppress(OSError):
                self._conn.send(None)

    def close(self, wait: float) -> None:
        """Wait up to ``wait`` seconds for a child asked to :meth:`end`, then kill it."""
        proc = self._proc
        if proc is not None:
            proc.join(wait)
        self.kill()

    def kill(self) -> list[ClaimedJob]:
        """Kill the child (the next job gets a fresh one), and stop the
        commands it ran (SIGTERM, SIGKILL after their grace); returns the jobs
        sent to it whose result was not taken, in order. Returns once they
        are dead; safe to call from two threads at once (a stopping worker,
        and the feeder that saw the child die)."""
        with self._guard:
            proc, conn, self._proc, self._conn = self._proc, self._conn, None, None
            groups, self._groups = self._groups, []
        if proc is not None:
            if proc.exitcode is None:
                groups += stop_groups_under(proc.pid)
            proc.kill()
            proc.join(5)
        if groups:
            end_groups(groups)
        if conn is not None:
            conn.close()
        with self._guard:
            sent, self._cancelled = list(self._sent), False
            self._sent.clear()
        return sent


class ProcessExecutor(Executor):
    """One child process per slot: for CPU-bound tasks. A job over its timeout has
    its child killed and replaced.

    While jobs are short (:class:`rota.worker.ahead.ClaimAhead`) and more
    wait than there are idle children, a busy child is sent its next job
    before its current one returns, so it goes from job to job without
    waiting for the parent in between. A job sent so runs in that child,
    even at shutdown (within the grace); with longer jobs none is sent
    ahead, and a waiting job goes to the first child that frees."""

    def __init__(self, app: App, size: int, on_done: OnDone, app_spec: str | None = None) -> None:
        super().__init__(app, size, on_done)
        method = "fork" if app_spec is None else "spawn"
        if method == "fork" and "fork" not in multiprocessing.get_all_start_methods():
            raise InvalidArgument("processes mode needs the app's import spec on this platform")
        ctx = multiprocessing.get_context(method)
        self._slots = [_ProcessSlot(ctx, app, app_spec) for _ in range(size)]
        self._turns = Turns()  # claimed jobs waiting for a feeder (which does not claim)
        self._claimer: threading.Thread | None = None
        self._claiming_stopped = False
        self._idle = 0  # feeder threads waiting for a job
        self._lock = threading.Lock()
        self._threads = [
            threading.Thread(target=self._feed, args=(slot,), name=f"rota-proc-{i}", daemon=True)
            for i, slot in enumerate(self._slots)
        ]

    def start(self, claim: Claim) -> None:
        for slot in self._slots:
            slot._spawn()
        self._claimer = threading.Thread(
            target=self._claim_loop, args=(claim,), name="rota-claim", daemon=True
        )
        self._claimer.start()
        for thread in self._threads:
            thread.start()

    def _claim_loop(self, claim: Claim) -> None:
        """Claim for the children, from a thread of their own: a feeder that
        claimed would leave its child idle for the claim's round trip."""
        while not self._claiming_stopped and (jobs := claim_safely(claim)) is not None:
            self._turns.put(jobs)

    def stop_claiming(self, timeout: float | None = None) -> None:
        self._claiming_stopped = True
        if self._claimer is not None:
            self._claimer.join(timeout)

    def take_waiting(self) -> list[ClaimedJob]:
        return self._turns.take_waiting()

    def cancel(self, job: ClaimedJob) -> None:
        for slot in self._slots:
            slot.stop(job)

    def _feed(self, slot: _ProcessSlot) -> None:
        """Send jobs to the slot's child and report their results, until stopped."""
        while True:
            if not slot.pending():
                with self._lock:
                    self._idle += 1
                job = self._turns.next()
                with self._lock:
                    self._idle -= 1
                if job is None:
                    return
                self._send(slot, job)
                continue
            if slot.pending() == 1 and self.short_jobs():
                self._send_spare(slot)
            try:
                job, result, unstarted = slot.result()
            except Exception as exc:
                sent = slot.kill()  # its child may hold the jobs: start afresh
                if not sent:
                    continue  # the executor stopped meanwhile
                job, unstarted = sent[0], sent[1:]
                result = runner.internal_failure(exc, "a feeder thread")
            self._turns.put(unstarted)
            self.on_done(job, result)

    def _send(self, slot: _ProcessSlot, job: ClaimedJob) -> None:
        if self.may_start(job):
            slot.send(job)

    def _send_spare(self, slot: _ProcessSlot) -> None:
        """Send the busy ``slot`` its next job now if one waits that no idle
        feeder would take."""
        with self._lock:
            spare = self._turns.waiting > self._idle
        if spare and (job := self._turns.take()) is not None:
            self._send(slot, job)

    def stop(self) -> None:
        self._turns.end(len(self._threads))
        for slot in self._slots:
            if slot.pending():
                slot.kill()  # its jobs go back to the queue: no waiting for them
        for slot in self._slots:
            slot.end()
        deadline = time.monotonic() + _CHILD_EXIT
        for slot in self._slots:
            slot.close(max(0.0, deadline - time.monotonic()))


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
                value = await asyncio.wait_for(fn(*args, **kwargs), job.timeout)
            else:
                value = await asyncio.to_thread(fn, *args, **kwargs)
            return runner.encode(value)
        except TimeoutError:
            return runner.failure(JobTimeout(f"timed out after {job.timeout} s; cancelled"))
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


__all__ = ["MODES", "Executor", "make_executor"]
