"""Job logs of the SQL engine: one row per chunk, in ``job_logs``.

A job's rows are deleted with it by a trigger (each dialect's migrations), so
every way a job leaves (delete, purge, retention) takes its logs along.
"""

from __future__ import annotations

from collections.abc import Sequence

from rota.models import LogChunk
from rota.stores.base import (
    DEFAULT_LOG_CAP,
    MAX_LOG_PAGE,
    check_log_chunks,
    check_log_query,
    dropped_bytes,
    dropped_note,
)
from rota.stores.sql.tx import Database, Tx


class Logs(Database):
    """``append_logs`` and ``job_logs``."""

    def append_logs(self, chunks: Sequence[LogChunk], cap: int = DEFAULT_LOG_CAP) -> None:
        check_log_chunks(chunks, cap)
        if not chunks:
            return

        def work(tx: Tx) -> None:
            now = tx.now()
            attempts: dict[tuple[str, int], None] = {}
            for c in chunks:
                row = {
                    "job_id": c.job_id,
                    "attempt": c.attempt,
                    "stream": c.stream,
                    "at": c.at or now,
                    "data": c.data,
                }
                if tx.execute("append_chunk", row).rowcount:
                    attempts[c.job_id, c.attempt] = None
            for job_id, attempt in attempts:
                _trim(tx, job_id, attempt, cap, now)

        self._transact(work)

    def job_logs(
        self, job_id: str, attempt: int | None = None, after: int = 0, limit: int = MAX_LOG_PAGE
    ) -> list[LogChunk]:
        check_log_query(job_id, attempt, after, limit)
        params = {"job_id": job_id, "attempt": attempt, "after": after, "limit": limit}
        with self._read() as tx:
            rows = tx.execute("job_logs", params).fetchall()
        return [LogChunk(job_id, r[1], r[2], r[4], r[3], r[0]) for r in rows]


def _trim(tx: Tx, job_id: str, attempt: int, cap: int, now: float) -> None:
    """Drop the oldest chunks of an attempt over ``cap`` bytes (always keeping
    its newest) and note how many bytes went in one first ``rota`` chunk."""
    size = tx.execute("attempt_size", (job_id, attempt)).fetchone()[0]
    if size <= cap:
        return
    rows = tx.execute("oldest_chunks", (job_id, attempt, -1)).fetchall()
    dropped, last = 0, None
    for seq, stream, nbytes, data in rows[:-1]:
        if stream == "rota":
            dropped += dropped_bytes(data)
        else:
            dropped += nbytes
            size -= nbytes
        last = seq
        if size <= cap:
            break
    if last is None:
        return
    tx.execute("drop_chunks_upto", (job_id, attempt, last))
    tx.execute("put_note", (last, job_id, attempt, now, dropped_note(dropped)))
