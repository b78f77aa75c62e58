"""Unique keys in the SQLite store: who holds a key, and what a finish does to it."""

from __future__ import annotations

import sqlite3

from rota.stores.sqlite._sql import queries

Q = queries()
_ACTIVE = ("scheduled", "queued", "parked", "running")


def unique_holder(conn: sqlite3.Connection, key: str, now: float) -> str | None:
    """The id of the job holding ``key``: one pending or running, or one that
    succeeded less than its ``unique_for`` ago. None when the key is free."""
    row = conn.execute(Q["unique_holder"], (key,)).fetchone()
    if row is None:
        return None
    job_id, until, state = row
    if until is None and state in _ACTIVE:
        return str(job_id)
    if until is not None and until > now:
        return str(job_id)
    return None


def settle_unique(
    conn: sqlite3.Connection, row: sqlite3.Row, now: float, *, succeeded: bool
) -> None:
    """After a job ended: keep its key for ``unique_for`` from now if it
    succeeded, else free the key (if the job still holds it)."""
    key = row["unique_key"]
    if key is None:
        return
    if succeeded and row["unique_for"]:
        conn.execute(Q["keep_unique_until"], (now + row["unique_for"], key, row["id"]))
    else:
        conn.execute(Q["release_unique"], (key, row["id"]))


def rehold_unique(conn: sqlite3.Connection, key: str, job_id: str, now: float) -> None:
    """Give ``key`` back to a job queued again by hand, unless another job holds it."""
    holder = unique_holder(conn, key, now)
    if holder is None or holder == job_id:
        conn.execute(Q["hold_unique"], (key, job_id))
