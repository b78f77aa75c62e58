"""Unique keys in the SQL engine: who holds a key, and what a finish does to it."""

from __future__ import annotations

from rota.stores.sql.tx import Tx

_ACTIVE = ("scheduled", "queued", "parked", "running")


def unique_holder(tx: Tx, key: str, now: float, *, lock: bool = False) -> str | None:
    """The id of the job holding ``key``: one pending or running, or one that
    succeeded less than its ``unique_for`` ago. None when the key is free.
    With ``lock``, the key is first locked for the rest of the transaction
    (``lock_unique_key``: a no-op where transactions run one at a time), so
    two transactions never both find it free."""
    if lock:
        tx.execute("lock_unique_key", (key,))
    row = tx.execute("unique_holder", (key,)).fetchone()
    if row is None:
        return None
    job_id, until, state = row
    if until is None and state in _ACTIVE:
        return str(job_id)
    if until is not None and until > now:
        return str(job_id)
    return None


def settle_unique(
    tx: Tx, key: str | None, job_id: str, unique_for: float | None, now: float, *, succeeded: bool
) -> None:
    """After job ``job_id`` ended: keep its ``key`` for ``unique_for`` from now
    if it succeeded, else free the key (if the job still holds it)."""
    if key is None:
        return
    if succeeded and unique_for:
        tx.execute("keep_unique_until", (now + unique_for, key, job_id))
    else:
        tx.execute("release_unique", (key, job_id))
