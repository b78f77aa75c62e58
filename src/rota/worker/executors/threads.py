"""Threads mode (the default): slots that are threads of the worker process."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from rota.models import ClaimedJob
from rota.worker import runner
from rota.worker.executors.base import Executor, OnDone
from rota.worker.turns import PACE, Claim, Turns

if TYPE_CHECKING:
    from rota.app import App


class ThreadExecutor(Executor):
    """``size`` slots that are threads: for I/O-bound tasks.

    One thread more than the slots holds the turn to claim while every slot
    runs a job (at most ``size`` run one at once), so a claim starts as soon
    as a slot frees with no job held for it, not once that slot has
    reported its job and come to claim itself: 50 ms jobs that each make a
    Redis round trip, on 50 slots, drain about 3 % faster; short jobs at the
    default settings, as fast as before (docs/performance.md).

    Timeouts are reported at the deadline, but Python cannot stop a thread:
    the worker asks the task to stop (its context reads cancelled, as for a
    cancel) and abandons the job (:meth:`abandon`), a fresh thread takes its
    slot, and the stuck thread ends once the task returns. At most ``size``
    threads are stuck at once; beyond that a timed-out job keeps its slot
    until it returns."""

    def __init__(self, app: App, size: int, on_done: OnDone) -> None:
        super().__init__(app, size, on_done)
        self._turns = Turns(pace=PACE, short=lambda: self.short_jobs(), limit=size)
        self._threads = [self._thread(i) for i in range(size + 1)]  # (one to claim, see above)
        self._busy = 0  # slots running a job
        self._lock = threading.Lock()
        self._running: dict[str, int] = {}  # the jobs being run: token -> thread
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
            thread_id = self._running.pop(job.token)
            self._replaced.add(job.token)
            self._busy -= 1
            self._spawned += 1
            thread = self._thread(self._spawned - 1)
            self._threads = [t for t in self._threads if t.is_alive()] + [thread]
        self._turns.leave(thread_id)  # its slot runs another job meanwhile
        thread.start()
        return True

    def _thread(self, number: int) -> threading.Thread:
        return threading.Thread(target=self._slot, name=f"rota-slot-{number}", daemon=True)

    def _slot(self) -> None:
        while (job := self._turns.next()) is not None:
            if not self.may_start(job):
                continue
            with self._lock:
                self._running[job.token] = threading.get_ident()
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
            self._running.pop(job.token, None)
            self._busy -= 1
            return False

    def stop(self) -> None:
        self._turns.end(len(self._threads))


__all__ = ["ThreadExecutor"]
