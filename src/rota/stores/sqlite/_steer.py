"""Operator actions of the SQLite store: cancel, retry, delete, queue modes, purge, limits."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence

from rota.stores import _checks
from rota.stores.base import check_mode
from rota.stores.sqlite import _notify
from rota.stores.sqlite._conn import Connections
from rota.stores.sqlite._limits import UNPARK_ALL
from rota.stores.sqlite._sql import queries
from rota.stores.sqlite._uniques import rehold_unique

Q = queries()
_PENDING = "('scheduled', 'queued', 'parked')"


class Steering(Connections):
    """Operator actions; each is one transaction."""

    def cancel(self, job_ids: Sequence[str], by: str | None = None) -> list[bool]:
        _checks.job_ids(job_ids)
        _checks.optional_text(by, "by")
        now = time.time()
        with self._write() as conn:
            applied = []
            for job_id in job_ids:
                row = conn.execute(Q["cancel_pending"], (now, job_id)).fetchone()
                if row is None:
                    marked = conn.execute(Q["cancel_running"], (now, by, job_id)).rowcount
                    applied.append(marked == 1)
                    continue
                applied.append(True)
                if row[0] is not None:
                    conn.execute(Q["release_unique"], (row[0], job_id))
        return applied

    def retry(self, job_ids: Sequence[str]) -> list[bool]:
        _checks.job_ids(job_ids)
        now = time.time()
        with self._write() as conn:
            applied = [
                conn.execute(
                    "UPDATE jobs SET state = 'queued', run_at = ?, attempt = 0, lost = 0,"
                    " finished_at = NULL, started_at = NULL, error = NULL, traceback = NULL,"
                    " cancel_at = NULL, cancel_by = NULL"
                    " WHERE id = ? AND state IN ('failed', 'cancelled')",
                    (now, job_id),
                ).rowcount
                == 1
                for job_id in job_ids
            ]
            self._rehold_uniques(conn, [j for j, ok in zip(job_ids, applied, strict=True) if ok])
        _notify.notify(self.path)
        return applied

    def retry_failed(self, queue: str | None = None, task: str | None = None) -> int:
        _checks.optional_text(queue, "queue")
        _checks.optional_text(task, "task")
        now = time.time()
        where: list[str] = ["state = 'failed'"]
        params: list[object] = [now]
        if queue is not None:
            where.append("queue = ?")
            params.append(queue)
        if task is not None:
            where.append("task = ?")
            params.append(task)
        with self._write() as conn:
            ids = [
                r[0]
                for r in conn.execute(
                    "UPDATE jobs SET state = 'queued', run_at = ?, attempt = 0, lost = 0,"
                    " finished_at = NULL, started_at = NULL, error = NULL, traceback = NULL"
                    f" WHERE {' AND '.join(where)} RETURNING id",
                    params,
                )
            ]
            self._rehold_uniques(conn, ids)
        _notify.notify(self.path)
        return len(ids)

    @staticmethod
    def _rehold_uniques(conn: sqlite3.Connection, job_ids: Sequence[str]) -> None:
        now = time.time()
        for job_id in job_ids:
            row = conn.execute("SELECT unique_key FROM jobs WHERE id = ?", (job_id,)).fetchone()
            if row and row[0] is not None:
                rehold_unique(conn, row[0], job_id, now)

    def delete(self, job_ids: Sequence[str]) -> list[bool]:
        _checks.job_ids(job_ids)
        with self._write() as conn:
            applied = []
            for job_id in job_ids:
                row = conn.execute(
                    "DELETE FROM jobs WHERE id = ? AND state != 'running' RETURNING unique_key",
                    (job_id,),
                ).fetchone()
                applied.append(row is not None)
                if row is not None and row[0] is not None:
                    conn.execute(
                        "DELETE FROM uniques WHERE key = ? AND job_id = ? AND until IS NULL",
                        (row[0], job_id),
                    )
        return applied

    def set_queue_mode(self, queue: str, mode: str) -> None:
        check_mode(queue, mode)
        with self._write() as conn:
            conn.execute(Q["set_queue_mode"], (queue, int(mode == "paused"), int(mode == "debug")))
        _notify.notify(self.path)

    def pause_queue(self, queue: str) -> None:
        self.set_queue_mode(queue, "paused")

    def resume_queue(self, queue: str) -> None:
        self.set_queue_mode(queue, "running")

    def purge_queue(self, queue: str) -> int:
        _checks.text(queue, "queue")
        with self._write() as conn:
            keys = conn.execute(
                f"DELETE FROM jobs WHERE queue = ? AND state IN {_PENDING}"
                " RETURNING unique_key, id",
                (queue,),
            ).fetchall()
            conn.executemany(
                "DELETE FROM uniques WHERE key = ? AND job_id = ?",
                [(k, i) for k, i in keys if k is not None],
            )
        return len(keys)

    def purge_finished(self, older_than: float, limit: int = 10_000) -> int:
        _checks.retention(older_than, limit)
        cutoff = time.time() - older_than
        with self._write() as conn:
            removed = conn.execute(
                "DELETE FROM jobs WHERE seq IN (SELECT seq FROM jobs INDEXED BY jobs_finished"
                " WHERE finished_at < ? LIMIT ?)",
                (cutoff, limit),
            ).rowcount
            conn.execute(
                "DELETE FROM uniques WHERE until IS NOT NULL AND until < ?", (time.time(),)
            )
            conn.execute(
                "DELETE FROM stats WHERE minute > 0 AND minute < ?",
                (int((time.time() - 2 * 86400) // 60),),
            )
            conn.execute("DELETE FROM workers WHERE heartbeat_at < ?", (time.time() - 86400,))
        return int(removed)

    def set_limit(self, key: str, concurrency: int | None) -> None:
        _checks.concurrency_override(key, concurrency)
        with self._write() as conn:
            conn.execute(
                "INSERT INTO limits (key, override) VALUES (?, ?)"
                " ON CONFLICT (key) DO UPDATE SET override = excluded.override",
                (key, concurrency),
            )
            conn.execute(Q["unpark_key"], (key, UNPARK_ALL))
        _notify.notify(self.path)

    def reset_breaker(self, key: str) -> bool:
        _checks.text(key, "limit key")
        with self._write() as conn:
            changed = conn.execute(
                "UPDATE limits SET failures = 0, open_until = NULL, probe = NULL"
                " WHERE key = ? AND open_until IS NOT NULL",
                (key,),
            ).rowcount
            conn.execute(Q["unpark_key"], (key, UNPARK_ALL))
        _notify.notify(self.path)
        return changed == 1
