"""Idle slots taking turns at the claim (leader and followers), woken as the
work needs them.

A slot with nothing to run takes a job left waiting if there is one;
otherwise it takes the claim if no other slot holds it, keeps the first job
claimed, leaves the rest waiting and passes the turn on (a baton wakes the
next idle slot) before running its own job. The slot that claims a job runs
it, with no hand-over to another thread on the way, and only idle slots
claim.

Paced slots (threads mode, while jobs are short) wake only as the work
needs them. Threads that run Python take the interpreter's lock in turn,
and a job that waits on a socket hands the lock to another thread and takes
it back when its reply comes: a Redis call made by eight threads at once
costs about twice the CPU of the same call made by two (measured in
docs/performance.md, "Slots woken as needed"). So a waiting job is taken by
a slot as it frees, and a parked slot is woken for it only while fewer
slots run than a target, :data:`OVERLAP` at first (one runs while another
waits on its I/O). While jobs wait, every ``pace`` (looked at by a slot as
it takes a job, or by a parked slot when none has), the target follows
the process's CPU use since the last look. Below :data:`IDLE_BELOW` of a
core, counted as the process would use a core to itself (:func:`core_wait`:
a process whose neighbours keep the cores busy uses little of one, and is
not idle for that), the running slots mostly wait on something (a slow
reply, a sleep), so the target doubles; above :data:`PARALLEL_ABOVE`, the
jobs' work runs outside the interpreter's lock (in C code that lets it go),
so more slots run in parallel, and the target doubles too; from
:data:`BUSY_FROM` (counted the first way) up to that, the lock is the limit
and the target halves, down to :data:`OVERLAP`. The target is kept from
one claimed batch to the next.

:class:`Turns` serves slots that are threads (threads mode, one thread more
than its slots, so that one holds the turn to claim while every slot runs
a job: ``limit``); the async executor's slots are coroutines and take
turns the same way on its loop.
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
from pathlib import Path

from rota.models import ClaimedJob

log = logging.getLogger("rota.worker")

#: One claim for the executor's free slots, waiting a while for work when
#: there is none: the jobs (already counted as the worker's), [] to be asked
#: again, or None once the worker stops claiming.
Claim = Callable[[], "list[ClaimedJob] | None"]

#: Wakes an idle slot to take the claim (the async executor's line).
BATON = object()

#: Paced slots running jobs at first: while one waits on its I/O, another runs.
OVERLAP = 2
#: Seconds between looks at the process's CPU use while jobs wait (a few of
#: the system scheduler's time slices).
PACE = 0.01
#: Seconds a turn to claim waits for a running slot before a parked one
#: takes it: short jobs hand it on without waking another thread, and a
#: job sent while the running ones block still starts at once.
BATON_DELAY = 0.01
#: Below this share of a core used while jobs wait, the running slots wait
#: on something: more of them run.
IDLE_BELOW = 0.4
#: From this share of a core up to PARALLEL_ABOVE, the interpreter's lock
#: is the limit: fewer slots run.
BUSY_FROM = 0.8
#: Above this share of a core, the jobs' work runs in parallel outside the
#: interpreter's lock: more slots run.
PARALLEL_ABOVE = 1.2


#: The calling thread's scheduler statistics on Linux: nanoseconds on a core,
#: nanoseconds runnable but waiting for one, time slices.
_SCHEDSTAT = Path("/proc/thread-self/schedstat")
#: Below this much runnable time since a thread's last look (nanoseconds),
#: its share of waiting says too little to count.
_RUNNABLE_MIN = 200_000
#: The most of a thread's runnable time counted as waiting for a core.
_CORE_WAIT_MAX = 0.9
_last_schedstat = threading.local()


def core_wait() -> float:
    """The share of the calling thread's runnable time since its previous call
    that it spent waiting for a core (the system's other threads and
    processes had them); 0 at its first call, after too short a time to
    tell, or where the system does not say (:data:`_SCHEDSTAT`)."""
    try:
        ran, waited = (int(n) for n in _SCHEDSTAT.read_bytes().split()[:2])
    except (OSError, ValueError):
        return 0.0
    last: tuple[int, int] | None = getattr(_last_schedstat, "value", None)
    _last_schedstat.value = (ran, waited)
    if last is None:
        return 0.0
    ran, waited = ran - last[0], waited - last[1]
    if ran + waited < _RUNNABLE_MIN:
        return 0.0
    return min(_CORE_WAIT_MAX, waited / (ran + waited))


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

    ``pace``: seconds between looks at the process's CPU use while jobs
    wait and ``short()`` says the jobs are short (see the module's
    docstring); None, or while jobs are long, a parked slot is woken for
    every waiting job at once. ``limit``: the most slots running a job at
    once (None: every slot that asks), where more slots take turns at the
    claim."""

    def __init__(
        self,
        pace: float | None = None,
        short: Callable[[], bool] | None = None,
        limit: int | None = None,
    ) -> None:
        self.pace = pace
        self._limit = limit
        self._short = short or (lambda: True)
        self._lock = threading.Lock()
        self._jobs: deque[ClaimedJob] = deque()
        #: Idle slots, each waiting on its own held lock; the latest parked last.
        self._parked: list[threading.Lock] = []
        self._woken = 0  # parked slots let go that have not looked yet
        self._looking = False  # whether a parked slot looks every pace
        self._running: set[int] = set()  # the slots (threads) running a job
        #: Slots to run at once while paced.
        self.target = OVERLAP
        #: When the latest look was, and the process's CPU time then (from
        #: the clock ``process_time`` reads, to the nanosecond: the
        #: worker's LoadMeter counts the kernel's 10 ms ticks, as much as
        #: one look spans).
        self._looked: tuple[float, float] | None = None
        self._baton = False
        #: When a parked slot may take a turn left by the slot woken for it
        #: (None: no such turn; see next()).
        self._baton_due: float | None = None
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

    def close(self, timeout: float | None = None) -> None:
        """Claim no more; return once a claim under way has returned, or
        after ``timeout`` seconds (None: no limit)."""
        self._claim = None
        if self._leader.acquire(timeout=-1 if timeout is None else timeout):
            self._leader.release()

    def put(self, jobs: list[ClaimedJob]) -> None:
        """Leave ``jobs`` for the next idle slots."""
        with self._lock:
            self._jobs.extend(jobs)
            self._wake(self._wanted(self._paced()))

    def end(self, slots: int) -> None:
        """Tell ``slots`` slots to stop once they are idle (after the jobs
        left waiting)."""
        with self._lock:
            self._stops += slots
            self._wake(len(self._parked))

    def leave(self, thread_id: int | None = None) -> None:
        """The slot of thread ``thread_id`` (by default the calling one) ends
        without asking for another job, or no longer counts as running (its
        thread, stuck in a job, was abandoned)."""
        with self._lock:
            self._running.discard(threading.get_ident() if thread_id is None else thread_id)

    def next(self) -> ClaimedJob | None:
        """The next job for the calling slot, claimed by it (while a claim is
        open) or left for it; None to stop."""
        me = threading.get_ident()
        lock = self._lock
        lock.acquire()
        try:
            finished = me in self._running  # (else it was parked)
            self._running.discard(me)
            while True:
                paced = self._paced()
                waiting = self._jobs
                if waiting and self._may_run(paced):
                    self._running.add(me)
                    job = waiting.popleft()
                    if not waiting:
                        self._looked = None  # the next look counts from the next batch
                    elif paced:
                        self._look()
                    dropped = self._baton and not waiting and self._claim is not None
                    if dropped:
                        # the last waiting job taken, and no slot holds the
                        # turn to claim: a running slot that ends soon takes
                        # it, else a parked one does once it is due
                        self._baton_due = time.monotonic() + BATON_DELAY
                    if self._parked:
                        wanted = self._wanted(paced)  # the target's slots, and one to look
                        self._wake(max(wanted, 1 - self._woken) if dropped else wanted)
                    return job
                if self._stops and not self._jobs:
                    self._stops -= 1
                    self._wake(self._stops)  # (a slot parked at the limit stops too)
                    return None
                due = self._baton_due
                if due is not None and not finished and self._running and time.monotonic() < due:
                    self._park(until=due)
                    continue
                if (
                    (self._baton or not self._jobs)
                    and self._claim is not None
                    and self._leader.acquire(blocking=False)
                ):
                    self._baton = False
                    self._baton_due = None
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
                    paced = self._paced()
                    if jobs and self._may_run(paced):
                        self._running.add(me)  # the claimer runs its first job
                        first = self._jobs.popleft()
                        self._wake(max(1, self._wanted(paced)))  # and an idle slot takes the baton
                        return first
                    self._wake(self._wanted(paced))
                    continue  # the jobs wait for running slots; this one keeps the baton
                self._park()
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

    def _may_run(self, paced: bool) -> bool:
        """Whether one more slot may run a job now."""
        running = len(self._running)
        if self._limit is not None and running >= self._limit:
            return False
        return bool(self._stops) or not paced or running < self.target

    def _paced(self) -> bool:
        """Whether slots wake only as the work needs them, now."""
        return self.pace is not None and self._short()

    def _wanted(self, paced: bool) -> int:
        """How many parked slots to wake for the waiting jobs."""
        if not paced:
            return len(self._jobs) - self._woken
        wanted = min(len(self._jobs), self.target - len(self._running))
        if self._jobs and not self._looking:
            wanted = max(wanted, 1)  # a parked slot to look every pace
        return wanted - self._woken

    def _wake(self, slots: int) -> None:
        while slots > 0 and self._parked:
            self._parked.pop().release()
            self._woken += 1
            slots -= 1

    def _park(self, until: float | None = None) -> None:
        """Wait to be woken (releasing the lock meanwhile), or until ``until``
        (``time.monotonic()``) when given. While paced jobs wait, one parked
        slot looks every pace."""
        timeout = -1.0
        looking = False
        if until is not None:
            timeout = max(0.0, until - time.monotonic())
        elif self._jobs and not self._looking and self._paced():
            assert self.pace is not None
            self._looking = looking = True
            timeout = self.pace
        waiter = threading.Lock()
        waiter.acquire()
        self._parked.append(waiter)
        self._lock.release()
        try:
            waiter.acquire(timeout=timeout)
        finally:
            self._lock.acquire()
        if looking:
            self._looking = False
        if waiter not in self._parked:
            self._woken -= 1
        elif looking:  # it looked again in time: none woke it
            self._parked.remove(waiter)
            self._look()
            self._wake(self._wanted(self._paced()) - 1)  # this one counts itself
        else:
            self._parked.remove(waiter)

    def _look(self) -> None:
        """Every pace while jobs wait, set the target from the process's CPU
        use since the last look (the first look of a batch starts the count):
        whether it idles or is busy, as it would use a core to itself; whether
        it runs in parallel, as it used the cores."""
        assert self.pace is not None
        now = time.monotonic()
        if self._looked is not None and now - self._looked[0] < self.pace:
            return
        cpu = time.process_time()
        if self._looked is not None:
            used = (cpu - self._looked[1]) / (now - self._looked[0])
            wanted = used / (1.0 - core_wait())
            running = len(self._running)
            if running >= self.target and (wanted < IDLE_BELOW or used > PARALLEL_ABOVE):
                self.target = 2 * running
            elif wanted >= BUSY_FROM and used <= PARALLEL_ABOVE:
                self.target = max(OVERLAP, self.target // 2)
        self._looked = (now, cpu)
