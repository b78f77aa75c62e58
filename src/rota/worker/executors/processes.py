"""Processes mode: each slot a child process, fed over a pipe by a thread of
the parent that claims for the free children."""

from __future__ import annotations

import collections
import contextlib
import logging
import multiprocessing
import multiprocessing.connection
import os
import signal
import threading
import time
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING

from rota.commands import COMMAND_TASK, end_groups, stop_groups_under
from rota.errors import InvalidArgument, JobCancelled
from rota.models import ClaimedJob
from rota.worker import joblogs, runner
from rota.worker.executors.base import Executor, OnDone
from rota.worker.runner import Result
from rota.worker.turns import Claim, Turns, claim_safely

if TYPE_CHECKING:
    from multiprocessing.context import BaseContext
    from multiprocessing.process import BaseProcess

    from rota.app import App


#: Seconds the idle children of a stopping processes-mode worker get to run
#: their stop hooks and exit, all together, before they are killed (a child
#: still running a job then is killed at once: its job goes back to the queue).
_CHILD_EXIT = 5.0
#: Seconds a new child gets to load the app and run its start hooks: a job's
#: timeout counts from the child's word that it is ready.
_CHILD_START = 60.0
_READY = "ready"
#: A child's answer for a job it was sent and then told not to start (:class:`_Gate`).
_SKIPPED = "skipped"


class _Gate:
    """Where a child and its parent agree whether a job sent ahead starts.

    A slot numbers the jobs it sends its child. The child takes each up
    here before it runs it; the parent may stop a job that waits in the
    pipe here, and the child then answers :data:`_SKIPPED` without running
    it. Once the child has taken a job up, only a kill stops it. Shared
    memory and a lock, made before the child starts: no round trip."""

    def __init__(self, ctx: BaseContext) -> None:
        self._lock = ctx.Lock()
        #: [the number of the job the child took up last, of a job not to start]
        self._marks = ctx.RawArray("q", 2)

    def take_up(self, number: int) -> bool:
        """In the child: whether job ``number`` may run (and it is taken up)."""
        with self._lock:
            self._marks[0] = number
            return bool(self._marks[1] != number)

    def hold_back(self, number: int) -> bool:
        """In the parent: keep job ``number`` from starting; False if the
        child has taken it up already. (One job at a time waits in a
        child's pipe, so one is held back at a time.)"""
        with self._lock:
            if self._marks[0] >= number:
                return False
            self._marks[1] = number
            return True


def _let_pass(signum: int, frame: object) -> None:
    """A child's handler of SIGINT and SIGTERM: nothing (see :func:`_child_main`)."""


def _end_with_parent() -> None:
    """End this child at once when the worker that started it dies, even by
    SIGKILL: its job is left to the lease, as a thread's would be, and the
    commands it runs are stopped by their guards (:mod:`rota.commands`)."""
    parent = multiprocessing.parent_process()
    if parent is None:
        return

    def watch() -> None:
        multiprocessing.connection.wait([parent.sentinel])
        os._exit(1)

    threading.Thread(target=watch, name="rota-parent-watch", daemon=True).start()


def _child_main(
    conn: Connection,
    gate: _Gate,
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
    shared with a child). Jobs come numbered, and one the parent held back
    at the ``gate`` is answered :data:`_SKIPPED`, unrun. A ``None`` sent in
    place of a job ends the child, and so does the death of the worker
    (:func:`_end_with_parent`).

    Once running, the child lets SIGINT and SIGTERM pass: a Ctrl-C or a
    service manager signals the whole process group, and the parent, not
    the signal, ends the child once its job is done (or kills it after the
    grace). They are caught, not ignored: the commands a job starts get
    them back as their defaults (an ignored signal would stay ignored in
    them, and they could not be stopped but by SIGKILL)."""
    signal.signal(signal.SIGINT, _let_pass)
    signal.signal(signal.SIGTERM, _let_pass)
    _end_with_parent()
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
                sent = conn.recv()
            except (EOFError, KeyboardInterrupt):
                return
            if sent is None:
                return
            number, job = sent
            if not gate.take_up(number):
                conn.send(_SKIPPED)
                continue
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
    one it runs, the next (one at most) waits in the pipe."""

    def __init__(self, ctx: BaseContext, app: App, app_spec: str | None) -> None:
        self._ctx = ctx
        self._app = app
        self._spec = app_spec
        self._proc: BaseProcess | None = None
        self._conn: Connection | None = None
        self._guard = threading.Lock()
        self._gate = _Gate(ctx)  # shared with each child it starts in turn
        self._numbered = 0  # jobs sent so far, each numbered for the gate
        self._sent: collections.deque[tuple[int, ClaimedJob]] = collections.deque()
        self._cancelled = False  # the first job sent was cancelled
        #: The job stopped while it waited in the pipe but too late for the
        #: gate: it ends cancelled, its child killed as it starts the job.
        self._late_stop: ClaimedJob | None = None
        self._ready = False  # the child said it is ready
        self._groups: list[int] = []  # its commands' process groups, sent SIGTERM

    def _spawn(self) -> tuple[BaseProcess, Connection]:
        parent, child = self._ctx.Pipe()
        inherited = self._app if self._spec is None else None
        proc = self._ctx.Process(  # type: ignore[attr-defined]
            target=_child_main,
            args=(
                child,
                self._gate,
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
            self._numbered += 1
            sent = (self._numbered, job)
            self._sent.append(sent)
        with contextlib.suppress(OSError):
            conn.send(sent)

    def result(self) -> tuple[ClaimedJob, Result, list[ClaimedJob]]:
        """Wait for the result of the first job sent, for at most its timeout
        (counted from here: the child starts it as the previous one returns).
        Returns that job, its result, and the jobs sent after it when its
        child had to be killed (timed out, cancelled, its lease lost: also
        when that came as the job returned, whose result then stands) or
        died: the child may have started the next one, which goes to a
        fresh child. A job held back at the gate (:meth:`stop`) comes back
        cancelled, unrun, and its child stays."""
        job = self._sent[0][1]
        proc, conn = self._proc, self._conn
        assert proc is not None and conn is not None
        try:
            if not self._ready and not self._await_ready(conn):
                late = f"the child process did not start within {_CHILD_START:g} s"
                result = runner.failure(RuntimeError(late))
            elif conn.poll(job.timeout):
                result = conn.recv()
                if result == _SKIPPED:  # held back at the gate
                    result = runner.failure(JobCancelled(job.id), retryable=False)
                with self._guard:
                    self._sent.popleft()
                    stopped, self._cancelled = self._cancelled, False
                    if self._sent and self._sent[0][1] is self._late_stop:
                        self._kill_for(self._sent[0][1])  # it starts as this one returns
                # stopped as it returned (cancelled, or its lease lost): its
                # result stands, and the jobs sent after it go to a fresh
                # child, not to the one just killed (each would fail there)
                return job, result, self.kill() if stopped else []
            else:
                result = runner.failure(runner.timed_out(job, "child process killed"))
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
        """Stop ``job``, which :meth:`result` then reports cancelled. If it
        waits in the pipe, the child is told at the gate not to start it;
        if the child runs it (or took it up just now, as the job before it
        returned), the child is killed, at once or as the job starts, and
        the next job gets a fresh child."""
        with self._guard:
            if self._sent and self._sent[0][1] is job:
                self._kill_for(job)
                return
            number = next((n for n, sent in self._sent if sent is job), None)
            if number is not None and not self._gate.hold_back(number):
                self._late_stop = job

    def _kill_for(self, job: ClaimedJob) -> None:
        """Kill the child running ``job``, stopped (with ``_guard`` held)."""
        if self._late_stop is job:
            self._late_stop = None
        if self._proc is not None:
            self._cancelled = True
            self._groups += stop_groups_under(self._proc.pid)  # they outlive the child
            self._proc.kill()

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
            sent, self._cancelled, self._late_stop = [j for _, j in self._sent], False, None
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


__all__ = ["ProcessExecutor", "died"]
