"""Queue modes in the SQL engine: the ``queues`` row's ``paused`` and
``debug`` flags, and the pause of a debug queue at its first failure."""

from __future__ import annotations

from collections.abc import Iterable

from rota.stores.sql.tx import Tx


def mode(paused: object, debug: object) -> str:
    """The mode a ``queues`` row's flags stand for."""
    if paused:
        return "paused"
    return "debug" if debug else "running"


def queue_modes(tx: Tx) -> dict[str, tuple[str, str | None]]:
    """Every queue with a row: its mode and the job that paused it in debug mode."""
    return {
        name: (mode(paused, debug), debug_job)
        for name, paused, debug, debug_job in tx.execute("queue_modes")
    }


def lock_debug_queues(tx: Tx, queues: Iterable[str]) -> None:
    """Make a claim on ``queues`` wait for a failure pausing one of them in
    debug mode (and such a failure wait for the claim): a claim is then
    never recorded after the pause, nor a failure before it. (Claims on a
    queue in debug mode take turns.)"""
    for queue in queues:
        tx.execute("lock_debug_queue", (queue,))


def hold_debug_queues(tx: Tx, failing: Iterable[str], now: float) -> float:
    """Lock the rows of the queues among ``failing`` (the queues of the
    failures a transaction records) that are in debug mode or were paused by
    it, and return the clock to record the failures at: read again after the
    locks when there were some, so that failures and claims in a debug queue
    are in clock order; else ``now``."""
    held = [tx.execute("hold_debug_queue", (queue,)).fetchall() for queue in sorted(set(failing))]
    return tx.now_after_locks() if any(held) else now


class DebugPause:
    """Pauses each debug queue at the first failure recorded in one write
    transaction (the one passed in), linking the failed job."""

    def __init__(self, tx: Tx) -> None:
        self._tx = tx
        self._armed: set[str] | None = None  # read at the first failure

    def failed(self, queue: str, job_id: str) -> None:
        """Record that ``job_id`` of ``queue`` failed an attempt."""
        if self._armed is None:
            self._armed = {row[0] for row in self._tx.execute("debug_queues")}
        if queue in self._armed:
            self._armed.discard(queue)
            self._tx.execute("debug_pause", (job_id, queue))
