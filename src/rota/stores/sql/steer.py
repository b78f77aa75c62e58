"""Operator actions of the SQL engine: cancel, retry, delete, queue modes,
purges, limit overrides. Each is one write transaction."""

from __future__ import annotations

from collections.abc import Sequence

from rota import _json
from rota.stores import _checks
from rota.stores.base import check_mode, report_progress
from rota.stores.sql.limits import UNPARK_ALL, LimitBook
from rota.stores.sql.tx import Database, Tx
from rota.stores.sql.uniques import unique_holder

_DAY = 86400.0


class Steering(Database):
    """The steering verbs of the store contract."""

    def cancel(self, job_ids: Sequence[str], by: str | None = None) -> list[bool]:
        _checks.job_ids(job_ids)
        _checks.optional_text(by, "by")

        def work(tx: Tx) -> list[bool]:
            now = tx.now()
            entry = by_hand_entry("cancelled", now, by)
            applied = []
            for job_id in job_ids:
                row = tx.execute("cancel_pending", (now, entry, job_id)).fetchone()
                if row is None:
                    marked = tx.execute("cancel_running", (now, by, job_id)).rowcount
                    applied.append(marked == 1)
                    continue
                applied.append(True)
                if row[0] is not None:
                    tx.execute("release_unique", (row[0], job_id))
            return applied

        return self._transact(work)

    def retry(self, job_ids: Sequence[str], by: str | None = None) -> list[bool]:
        _checks.job_ids(job_ids)
        _checks.optional_text(by, "by")

        def work(tx: Tx) -> list[bool]:
            now = tx.now()
            entry = by_hand_entry("requeued", now, by)
            applied = [_retry_one(tx, job_id, now, entry) for job_id in job_ids]
            tx.wake()
            return applied

        return self._transact(work)

    def retry_failed(
        self, queue: str | None = None, task: str | None = None, by: str | None = None
    ) -> int:
        _checks.optional_text(queue, "queue")
        _checks.optional_text(task, "task")
        _checks.optional_text(by, "by")
        where, params = ["is_failed"], []
        if queue is not None:
            where.append("of_queue")
            params.append(queue)
        if task is not None:
            where.append("of_task")
            params.append(task)

        def work(tx: Tx) -> int:
            now = tx.now()
            entry = by_hand_entry("requeued", now, by)
            # jobs without a unique key in one statement; the others one by one,
            # each only if no other job holds its key
            unkeyed = [*where, "has_no_unique_key"]
            plain = tx.execute("retry_where", (now, entry, *params), where=unkeyed)
            count = len(plain.fetchall())
            keyed = tx.execute("ids_where", params, where=[*where, "has_unique_key"]).fetchall()
            count += sum(_retry_one(tx, row[0], now, entry) for row in keyed)
            tx.wake()
            return count

        done = self._transact(work)
        report_progress(done)  # one transaction: all of it, once committed
        return done

    def delete(self, job_ids: Sequence[str]) -> list[bool]:
        _checks.job_ids(job_ids)

        def work(tx: Tx) -> list[bool]:
            applied = []
            for job_id in job_ids:
                row = tx.execute("delete_job", (job_id,)).fetchone()
                applied.append(row is not None)
                if row is not None and row[0] is not None:
                    tx.execute("release_pending_unique", (row[0], job_id))
            return applied

        return self._transact(work)

    def set_queue_mode(self, queue: str, mode: str) -> None:
        check_mode(queue, mode)
        flags = (queue, int(mode == "paused"), int(mode == "debug"))

        def work(tx: Tx) -> None:
            tx.execute("set_queue_mode", flags)
            tx.wake()

        self._transact(work)

    def pause_queue(self, queue: str) -> None:
        self.set_queue_mode(queue, "paused")

    def resume_queue(self, queue: str) -> None:
        self.set_queue_mode(queue, "running")

    def purge_queue(self, queue: str) -> int:
        _checks.text(queue, "queue")

        def work(tx: Tx) -> int:
            keys = tx.execute("purge_pending", (queue,)).fetchall()
            tx.executemany("release_unique", [(k, i) for k, i in keys if k is not None])
            return len(keys)

        done = self._transact(work)
        report_progress(done)  # one transaction: all of it, once committed
        return done

    def purge_finished(self, older_than: float, limit: int = 10_000) -> int:
        _checks.retention(older_than, limit)

        def work(tx: Tx) -> int:
            now = tx.now()
            removed = tx.execute("purge_finished_jobs", (now - older_than, limit)).rowcount
            tx.execute("purge_uniques", (now,))
            tx.execute("purge_stats", (int((now - 2 * _DAY) // 60),))
            tx.execute("purge_workers", (now - _DAY,))
            _prune_idle_state(tx, now, limit)
            return int(removed)

        return self._transact(work)

    def set_limit(self, key: str, concurrency: int | None) -> bool:
        _checks.concurrency_override(key, concurrency)
        return self._override(key, "set_limit_override", concurrency)

    def set_rate(self, key: str, rate: float | None) -> bool:
        _checks.rate_override(key, rate)
        value = None if rate is None else float(rate)
        # the time since the bucket's last take is credited at the rate it had
        return self._override(key, "set_rate_override", value, settle=True)

    def _override(self, key: str, query: str, value: float | None, settle: bool = False) -> bool:
        """Write an override of ``key`` with ``query``; a clear (None) of a key
        the store does not know writes nothing and is False. ``settle``:
        bring the key's bucket up to now first."""

        def work(tx: Tx) -> bool:
            if value is None and tx.execute("limit_key_known", (key,)).fetchone() is None:
                return False
            if settle:
                book = LimitBook(tx, tx.now())
                book.settle(key)
                book.save()
            tx.execute(query, (key, value))
            tx.execute("unpark_key", (key, UNPARK_ALL))
            tx.wake()
            return True

        return self._transact(work)

    def reset_breaker(self, key: str) -> bool:
        _checks.text(key, "limit key")

        def work(tx: Tx) -> bool:
            changed = tx.execute("reset_breaker", (key,)).rowcount
            tx.execute("unpark_key", (key, UNPARK_ALL))
            tx.wake()
            return bool(changed == 1)

        return self._transact(work)


def _prune_idle_state(tx: Tx, now: float, limit: int) -> None:
    """Drop up to ``limit`` each of the host sightings, fair keys and limit
    keys that carry nothing a key never seen would not: a host no worker has
    served the queue from for a day (the workers' own horizon), a fair key the
    queue's clock has passed, a limit key with nothing running, no override,
    a closed breaker without failures and a full bucket. The limit keys go
    last, so the claims their rows' locks hold up wait only for the commit."""
    tx.execute("purge_hosts", (now - _DAY, limit))
    tx.execute("purge_fair_keys", (limit,))
    tx.execute("purge_idle_limits", (now, limit))


def by_hand_entry(event: str, now: float, by: str | None) -> bytes:
    """The history entry of a job steered by hand outside any attempt:
    ``requeued`` (its attempts count afresh) or ``cancelled`` before it ran."""
    return _json.dumps_record({"event": event, "by": by, "at": now}, what="history entry")


def _retry_one(tx: Tx, job_id: str, now: float, entry: bytes) -> bool:
    """Queue failed or cancelled job ``job_id`` again, with its unique key and
    the history ``entry``: False, and nothing changed, when the job is in
    another state or another job holds its key (guarantee 6: one job per key
    at a time)."""
    row = tx.execute("retry_candidate", (job_id,)).fetchone()
    if row is None:
        return False
    key = row[0]
    if key is not None:
        holder = unique_holder(tx, key, now, lock=True)
        if holder is not None and holder != job_id:
            return False
    tx.execute("retry_job", (now, entry, job_id))
    if key is not None:
        tx.execute("hold_unique", (key, job_id))
    return True
