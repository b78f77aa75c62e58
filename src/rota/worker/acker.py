"""The worker's acker: it reports finished attempts to the store in batches.

A slot that ends an attempt hands its outcome over (:meth:`Acker.put`) and
goes on; the acker thread (:meth:`Acker.run`) sends whatever has finished in
one ``finish`` call. While more of the worker's jobs run, an outcome waits
up to :data:`LINGER` for others to share its report; once none is left in
flight the report goes at once. Outcomes not yet acknowledged stay with the
acker, so a store outage that restarts its thread loses none.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rota.errors import InvalidArgument
from rota.models import ClaimedJob, Outcome

if TYPE_CHECKING:
    from rota.app import App

log = logging.getLogger("rota.worker")

#: The most outcomes in one report.
BATCH = 500
#: Seconds an outcome may wait for others to share its report while more of
#: the worker's jobs run or wait for a slot (with none left in flight, the
#: report goes at once). A report costs the worker and the store far more
#: than one more outcome in it: with short jobs that do a round trip, 20 ms
#: gives reports of about 40 outcomes where 5 ms gave 17, and 5-10 % less CPU
#: per job, workers and redis-server (docs/performance.md). The price: a busy
#: worker's job shows as finished, and frees its concurrency slots, up to
#: this long after it ends.
LINGER = 0.02


@dataclass(slots=True)
class Done:
    """A finished attempt waiting to be reported: its outcome, the job, how
    long it ran, and whether the store had asked to cancel it (it then ends
    cancelled, whatever the outcome)."""

    job: ClaimedJob
    outcome: Outcome
    seconds: float
    cancelled: bool = False


class Acker:
    """Reports the outcomes :meth:`put` to it, in batches, from :meth:`run`.

    ``reported(batch, applied)`` is called after each report with what the
    store took (``applied``: one flag per outcome, False where its lease had
    moved on); ``in_flight()`` says whether attempts still run or wait for
    a slot, and ``none_in_flight`` is set once none does (it ends a linger);
    ``refused()`` is called for each outcome the store refused as invalid
    (reported again as a failure naming the refusal)."""

    def __init__(
        self,
        app: App,
        *,
        reported: Callable[[list[Done], list[bool]], None],
        in_flight: Callable[[], bool],
        none_in_flight: threading.Event,
        refused: Callable[[], None],
    ) -> None:
        self._app = app
        self._reported = reported
        self._in_flight = in_flight
        self._none_in_flight = none_in_flight
        self._refused = refused
        self._outcomes: queue.SimpleQueue[Done | None] = queue.SimpleQueue()
        self._pending: list[Done] = []  # taken from the queue, not yet acknowledged
        self._closing = False

    def put(self, done: Done) -> None:
        """Report ``done`` with the next batch (any thread)."""
        self._outcomes.put(done)

    def close(self) -> None:
        """Report what was put before, then end :meth:`run`."""
        self._outcomes.put(None)

    def run(self) -> None:
        """Report outcomes in batches until :meth:`close`: what has come, and
        while other jobs run, what comes within :data:`LINGER`. Raises on a
        store outage, keeping the batch for the next call."""
        pending = self._pending
        while True:
            if not pending:
                first = self._outcomes.get()
                if first is None:
                    return
                pending.append(first)
            linger_until = time.monotonic() + LINGER
            while len(pending) < BATCH:
                try:
                    more = self._outcomes.get_nowait()
                except queue.Empty:
                    left = linger_until - time.monotonic()
                    if left <= 0 or not self._in_flight():
                        break
                    # Linger woken only once nothing is in flight, not by each
                    # outcome: waking this thread per job costs more than its report.
                    self._none_in_flight.wait(left)
                    continue
                if more is None:
                    self._closing = True
                    break
                pending.append(more)
            applied = self.report([done.outcome for done in pending])
            self._reported(pending, applied)
            pending.clear()
            if self._closing:
                return

    def report(self, outcomes: list[Outcome]) -> list[bool]:
        """``store.finish(outcomes)``, never stalled by one bad outcome: when the
        store refuses a batch as invalid, each outcome is reported alone, and one
        refused again becomes a plain failure naming the refusal. Outages and
        other store errors raise, and the batch is reported again."""
        try:
            return self._app.store.finish(outcomes)
        except InvalidArgument as exc:
            if len(outcomes) > 1:
                return [ok for outcome in outcomes for ok in self.report([outcome])]
            refused = outcomes[0]
            log.error("the store refused the outcome of job %s: %s", refused.job_id, exc)
            self._refused()
            error = f"internal error: the store refused this attempt's outcome: {exc}"
            return self._app.store.finish(
                [Outcome(refused.job_id, refused.token, False, error=error)]
            )
