"""Idle slots taking turns at the claim (leader and followers), woken as the
work needs them.

A slot with nothing to run takes a job left waiting if there is one;
otherwise it takes the claim if no other slot holds it, keeps the first job
claimed, leaves the rest waiting and passes the turn on (a baton wakes the
next idle slot) before running its own job. The slot that claims a job runs
it, with no hand-over to another thread on the way, and only idle slots
claim.

Paced slots (threads mode) wake only as the work needs them. Every thread
that runs Python takes the interpreter's lock in turn, and a job that waits
on a socket hands it to another thread and takes it back when its reply
comes: a Redis call made by eight threads at once cost about twice the CPU
of the same call made by two (measured in docs/performance.md, "Slots woken
as needed"). So a waiting job is taken by
a slot as it frees, and a parked slot is woken for it only while fewer than
:data:`OVERLAP` slots run jobs, or while a running job has gone on for
:attr:`Turns.pace` or more (it waits on something: another slot can run
meanwhile); a slot that frees while :data:`OVERLAP` others run short jobs
parks. While jobs wait, the latest parked slot looks again every ``pace``,
so slots held up in long jobs double the slots running every ``pace`` until
every slot runs: a slot is never idle for long while a job waits for it.

:class:`Turns` serves slots that are threads (threads mode); the async
executor's slots are coroutines and take turns the same way on its loop.
Processes mode uses :class:`Turns` unpaced, only as the line of claimed
jobs waiting for a child: its feeder threads wait on their children, and
one that claimed would leave its child idle for the claim's round trip, so
a thread of its own claims for them.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable

from rota.models import ClaimedJob

log = logging.getLogger("rota.worker")

#: One claim for the executor's free slots, waiting a while for work when
#: there is none: the jobs (already counted as the worker's), [] to be asked
#: again, or None once the worker stops claiming.
Claim = Callable[[], "list[ClaimedJob] | None"]

#: Wakes an idle slot to take the claim (the async executor's line).
BATON = object()

#: Paced slots running short jobs at once: while one waits on its I/O,
#: another runs.
OVERLAP = 2
#: Seconds a paced slot's job runs before it counts as held up (waiting on
#: something), so that a parked slot is woken for a waiting job.
PACE = 0.002


def claim_safely(claim: Claim | None) -> list[ClaimedJob] | None:
    """``claim()``; an unexpected error is logged and costs a second, never the
    thread that claims."""
    if claim is None:
        return None
    try:
        return claim()
    except Exception:
        log.exception("claiming failed; trying again in a second")
        time.sleep(1.0)
        return []


class Turns:
    """Jobs waiting for a slot, and the claim the idle slot threads take turns at.

    ``pace``: seconds a running job may take before a parked slot is woken
    for a waiting job (see the module's docstring), while ``short()`` says
    the jobs are short; None, or while jobs are long, a parked slot is woken
    for every waiting job at once."""

    def __init__(self, pace: float | None = None, short: Callable[[], bool] | None = None) -> None:
        self.pace = pace
        self._short = short or (lambda: True)
        self._lock = threading.Lock()
        self._jobs: deque[ClaimedJob] = deque()
        #: Idle slots, each waiting on its own held lock; the latest parked last.
        self._parked: list[threading.Lock] = []
        self._woken = 0  # parked slots let go that have not looked yet
        self._looking = False  # whether a parked slot looks again every pace
        #: The slots running a job (paced only): thread -> when it started,
        #: the earliest first.
        self._running: dict[int, float] = {}
        self._baton = False
        self._stops = 0
        self._leader = threading.Lock()
        self._claim: Claim | None = None

    @property
    def waiting(self) -> int:
        """Jobs left waiting for a slot."""
        return len(self._jobs)

    def open(self, claim: Claim) -> None:
        """Let idle slots call ``claim``."""
        self._claim = claim

    def close(self) -> None:
        """Claim no more; return once a claim under way has returned."""
        self._claim = None
        with self._leader:
            pass

    def put(self, jobs: list[ClaimedJob]) -> None:
        """Leave ``jobs`` for the next idle slots."""
        with self._lock:
            self._jobs.extend(jobs)
            self._wake(self._wanted(time.monotonic()))

    def end(self, slots: int) -> None:
        """Tell ``slots`` slots to stop once they are idle (after the jobs
        left waiting)."""
        with self._lock:
            self._stops += slots
            self._wake(len(self._parked))

    def leave(self) -> None:
        """The calling slot ends without asking for another job."""
        with self._lock:
            self._running.pop(threading.get_ident(), None)

    def next(self) -> ClaimedJob | None:
        """The next job for the calling slot, claimed by it (while a claim is
        open) or left for it; None to stop."""
        me = threading.get_ident()
        lock = self._lock
        lock.acquire()
        try:
            self._running.pop(me, None)
            while True:
                now = time.monotonic()
                if self._jobs and (self._stops or self._should_take(now)):
                    return self._start(me, self._jobs.popleft(), now)
                if self._stops and not self._jobs:
                    self._stops -= 1
                    return None
                if (
                    (self._baton or not self._jobs)
                    and self._claim is not None
                    and self._leader.acquire(blocking=False)
                ):
                    self._baton = False
                    lock.release()
                    try:
                        jobs = claim_safely(self._claim)
                    finally:
                        self._leader.release()
                        lock.acquire()
                    if jobs is None:
                        continue  # claiming has ended
                    self._jobs.extend(jobs)
                    self._baton = True  # to claim meanwhile, or again after a wait for work
                    now = time.monotonic()
                    if jobs and self._should_take(now):  # the claimer runs its first job
                        first = self._start(me, self._jobs.popleft(), now)
                        self._wake(max(1, self._wanted(now)))  # and an idle slot takes the baton
                        return first
                    self._wake(self._wanted(now))
                    continue  # the jobs wait for running slots; this one keeps the baton
                self._park(now)
        finally:
            lock.release()

    def take(self) -> ClaimedJob | None:
        """A waiting job, without waiting or claiming, if there is one."""
        with self._lock:
            return self._jobs.popleft() if self._jobs else None

    def take_waiting(self) -> list[ClaimedJob]:
        """Take out every waiting job (the worker releases them at shutdown)."""
        with self._lock:
            taken = list(self._jobs)
            self._jobs.clear()
            return taken

    # -- with self._lock held -------------------------------------------------

    def _start(self, me: int, job: ClaimedJob, now: float) -> ClaimedJob:
        if self.pace is not None:
            self._running[me] = now
        return job

    def _should_take(self, now: float) -> bool:
        """Whether a slot asking for a job takes a waiting one, or parks."""
        if self.pace is None or len(self._running) < OVERLAP or not self._short():
            return True
        earliest = next(iter(self._running.values()))
        return now - earliest >= self.pace  # a job is held up: run another beside it

    def _wanted(self, now: float) -> int:
        """How many parked slots to wake for the waiting jobs."""
        if self.pace is None or not self._short():
            wanted = len(self._jobs)
        else:
            held_up = 0
            for started in self._running.values():  # the earliest first
                if now - started < self.pace:
                    break
                held_up += 1
            fresh = len(self._running) - held_up
            wanted = min(len(self._jobs), held_up + max(0, OVERLAP - fresh))
        if self._jobs and not self._looking and self.pace is not None:
            wanted = max(wanted, 1)  # a parked slot to look again every pace
        return wanted - self._woken

    def _wake(self, slots: int) -> None:
        while slots > 0 and self._parked:
            self._parked.pop().release()
            self._woken += 1
            slots -= 1

    def _park(self, now: float) -> None:
        """Wait to be woken (releasing the lock meanwhile). While jobs wait,
        one parked slot looks again every pace."""
        timeout = -1.0
        if self.pace is not None and self._jobs and not self._looking:
            self._looking = True
            timeout = self.pace
        waiter = threading.Lock()
        waiter.acquire()
        self._parked.append(waiter)
        self._lock.release()
        try:
            waiter.acquire(timeout=timeout)
        finally:
            self._lock.acquire()
        if timeout >= 0:
            self._looking = False
        if waiter in self._parked:  # it looked again in time: none woke it
            self._parked.remove(waiter)
            self._wake(self._wanted(time.monotonic()) - 1)  # this one counts itself
        else:
            self._woken -= 1
