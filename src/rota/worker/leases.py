"""Keeping the leases of a worker's attempts (its keeper thread's work):
renewing them, whose answers also tell of cancels and of leases lost, stopping
the attempts that must stop, and failing thread jobs whose timeout passed.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from rota.context import cancel_running
from rota.models import ClaimedJob, LeaseRef
from rota.worker import runner
from rota.worker.executors.base import Executor
from rota.worker.flights import Flight, Flights, claim_of
from rota.worker.runner import Result

if TYPE_CHECKING:
    from rota.app import App

log = logging.getLogger("rota.worker")

_LOST_LEASE = (
    "lease of job %s was lost (the store gave the job back to its queue): "
    "stopping this attempt, whose result the store will refuse"
)


class LeaseKeeper:
    """Keeps the leases of ``flights`` in ``app``'s store. ``executor`` runs
    the attempts (in ``mode``); ``on_done`` takes the result of an attempt
    that timed out, as the executor's own results."""

    def __init__(
        self,
        app: App,
        flights: Flights,
        executor: Executor,
        *,
        mode: str,
        on_done: Callable[[ClaimedJob, Result], None],
    ) -> None:
        self._app = app
        self._flights = flights
        self._executor = executor
        self._mode = mode
        self._on_done = on_done

    def interval(self, longest: float) -> float:
        """Seconds between two renewals: a third of the shortest lease held,
        at most ``longest`` and a second, at least 50 ms."""
        with self._flights.lock:
            leases = [f.job.lease for f in self._flights.inflight.values()]
        shortest = min(leases, default=self._app.lease)
        return max(0.05, min(longest, shortest / 3.0, 1.0))

    def renew(self) -> None:
        """Extend the leases of the running jobs, at every call: the answer
        also tells of a cancel. A job held for a slot, or ended and waiting
        for its report, is renewed once a third of its lease has passed (it
        has nothing to stop, and a worker may hold a hundred of them). A lease
        found lost is not asked for again: the job moved on, and its attempt
        is stopped if it runs (:meth:`stop`), or not started if it waits."""
        asked = time.monotonic()
        flights = self._flights

        def due(flight: Flight) -> bool:
            return not flight.lost and asked - flight.renewed >= flight.job.lease / 3

        with flights.lock:
            inflight = flights.inflight.values()
            running = [f for f in inflight if f.started is not None and not f.lost]
            held = [f for f in inflight if f.started is None and due(f)]
            asking = running + held
            asking += [f for f in flights.reporting.values() if due(f)]
            asking += [f for f in flights.releasing.values() if due(f)]
        if not asking:
            return
        refs = [LeaseRef(f.job.id, f.job.token) for f in asking]
        answers = zip(asking, refs, self._app.store.extend(refs), strict=True)
        for n, (flight, ref, status) in enumerate(answers):
            with flights.lock:
                if status == "lost":
                    flight.lost = True  # a held job is then not started
                else:
                    flight.renewed = asked
            if status == "cancel":
                with flights.lock:
                    flight.cancelled = True
                self.stop(ref, logging.INFO, "job %s was cancelled: stopping it")
            elif status == "lost" and n < len(running):
                # another worker may run it now: this attempt would only
                # duplicate its work (and, as a command, its load)
                self.stop(ref, logging.WARNING, _LOST_LEASE)

    def stop(self, ref: LeaseRef, level: int, why: str) -> None:
        """Stop the running attempt of claim ``ref``, once, logging ``why``: its
        context reads cancelled and runs its ``on_cancel`` callbacks (a
        command's process group is killed); the executor stops what it can
        (async tasks are cancelled, child processes killed). The store ends a
        cancelled job cancelled whatever its attempt then reports."""
        with self._flights.lock:
            flight = self._flights.inflight.get((ref.job_id, ref.token))
            if flight is None or flight.stopped:
                return
            flight.stopped = True
        log.log(level, why, ref.job_id)
        cancel_running(ref.token)
        self._executor.cancel(flight.job)

    def expire_soft_timeouts(self, now: float) -> float:
        """Report the running jobs whose timeout has passed (threads mode; the
        other modes stop their jobs themselves), and ask each to stop as a
        cancel does: Python cannot stop a thread, so its context reads
        cancelled and runs its ``on_cancel`` callbacks (a command's process
        group is stopped, an ``async def`` task cancelled). The attempt fails
        on the timeout whatever the task then does, and its slot goes to a
        fresh thread (:meth:`Executor.abandon`). Returns when the next one
        falls due (monotonic), or infinity."""
        if self._mode != "threads":
            return math.inf
        late: list[Flight] = []
        next_due = math.inf
        with self._flights.lock:
            for f in self._flights.inflight.values():
                if f.job.timeout is None or f.started is None:
                    continue  # (a held job's time starts with its slot)
                due = f.started + f.job.timeout
                if now > due:
                    late.append(f)
                else:
                    next_due = min(next_due, due)
        for flight in late:
            error = runner.timed_out(flight.job)
            abandoned = self._executor.abandon(flight.job)
            if not abandoned and claim_of(flight.job) in self._flights.inflight:
                log.warning(
                    "job %s timed out and %d threads are stuck already: its thread keeps "
                    "its slot until the task returns",
                    flight.job.id,
                    self._executor.stuck(),
                )
            # the timeout is the outcome: the task's own end, at the cancel, comes after it
            self._on_done(flight.job, runner.failure(error))
            cancel_running(flight.job.token)
        return next_due
