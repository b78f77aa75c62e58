"""Idle slots taking turns at the claim (leader and followers).

A slot with nothing to run takes a job left waiting if there is one;
otherwise it takes the claim if no other slot holds it, keeps the first job
claimed, leaves the rest waiting and passes the turn on (a baton wakes the
next idle slot) before running its own job. The slot that claims a job runs
it, with no hand-over to another thread on the way, and only idle slots
claim.

:class:`Turns` serves slots that are threads (threads mode); the async
executor's slots are coroutines and take turns the same way on its loop.
Processes mode uses :class:`Turns` only as the line of claimed jobs
waiting for a child: its feeder threads wait on their children, and one
that claimed would leave its child idle for the claim's round trip, so a
thread of its own claims for them.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
from collections.abc import Callable

from rota.models import ClaimedJob

log = logging.getLogger("rota.worker")

#: One claim for the executor's free slots, waiting a while for work when
#: there is none: the jobs (already counted as the worker's), [] to be asked
#: again, or None once the worker stops claiming.
Claim = Callable[[], "list[ClaimedJob] | None"]

#: Wakes an idle slot to take the claim.
BATON = object()


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
    """Jobs waiting for a slot, and the claim the idle slot threads take turns at."""

    def __init__(self) -> None:
        self._items: queue.SimpleQueue[ClaimedJob | object | None] = queue.SimpleQueue()
        self._leader = threading.Lock()
        self._claim: Claim | None = None
        self._count = threading.Lock()
        #: Jobs left waiting for a slot.
        self.waiting = 0

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
        with self._count:
            self.waiting += len(jobs)
        for job in jobs:
            self._items.put(job)

    def end(self, slots: int) -> None:
        """Tell ``slots`` slots to stop once they are idle."""
        for _ in range(slots):
            self._items.put(None)

    def next(self) -> ClaimedJob | None:
        """The next job for the calling slot, claimed by it (while a claim is
        open) or left for it; None to stop."""
        while True:
            try:
                item = self._items.get_nowait()
            except queue.Empty:
                if self._claim is not None and self._leader.acquire(blocking=False):
                    try:
                        jobs = claim_safely(self._claim)
                    finally:
                        self._leader.release()
                    if jobs:
                        self.put(jobs[1:])
                        self._items.put(BATON)  # the next idle slot claims meanwhile
                        return jobs[0]
                    if jobs is not None:
                        continue  # the claim waited a while for work: claim again
                item = self._items.get()
            if item is None:
                return None
            if isinstance(item, ClaimedJob):
                with self._count:
                    self.waiting -= 1
                return item

    def take(self) -> ClaimedJob | None:
        """A waiting job, without waiting or claiming, if there is one."""
        passed: list[object | None] = []
        try:
            while True:
                item = self._items.get_nowait()
                if isinstance(item, ClaimedJob):
                    with self._count:
                        self.waiting -= 1
                    return item
                passed.append(item)
        except queue.Empty:
            return None
        finally:
            self._put_back(passed)

    def take_waiting(self) -> list[ClaimedJob]:
        """Take out every waiting job (the worker releases them at shutdown)."""
        taken: list[ClaimedJob] = []
        passed: list[object | None] = []
        with contextlib.suppress(queue.Empty):
            while True:
                item = self._items.get_nowait()
                if isinstance(item, ClaimedJob):
                    taken.append(item)
                else:
                    passed.append(item)
        self._put_back(passed)
        with self._count:
            self.waiting -= len(taken)
        return taken

    def _put_back(self, passed: list[object | None]) -> None:
        """Put back the stops and a baton taken out while looking for jobs: an
        idle slot is still owed them."""
        for item in passed:
            if item is None:
                self._items.put(None)
        if BATON in passed:
            self._items.put(BATON)
