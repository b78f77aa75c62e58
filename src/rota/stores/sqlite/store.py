"""The SQLite store: rota's embedded default.

One database file in WAL mode, shared by any number of processes on one
machine. Every verb is one ``BEGIN IMMEDIATE`` transaction, so SQLite's
single writer lock makes each state change atomic. Claims and finishes are
batched: one transaction per batch, whatever its size.
"""

from __future__ import annotations

import secrets
import sqlite3
import time
from collections import Counter
from collections.abc import Sequence
from typing import Any, NamedTuple

from rota import _json, flow
from rota.errors import InvalidArgument, StoreError
from rota.models import (
    ClaimedJob,
    EnqueueResult,
    LeaseRef,
    NewJob,
    Outcome,
    WorkerInfo,
)
from rota.stores import _checks
from rota.stores.base import LeaseStatus, Store
from rota.stores.sqlite import _limits, _notify
from rota.stores.sqlite._audit import Audit
from rota.stores.sqlite._logs import Logs
from rota.stores.sqlite._modes import DebugPause
from rota.stores.sqlite._reads import Reads
from rota.stores.sqlite._schedules import Schedules
from rota.stores.sqlite._sql import queries
from rota.stores.sqlite._steer import Steering
from rota.stores.sqlite._uniques import settle_unique, unique_holder
from rota.stores.sqlite._users import Users

Q = queries()
_CHUNK = 500  # ids per IN (...) list, under SQLite's variable limit
# A claim takes a job whose stored lease is not a sane duration (written by
# something other than rota) with the fallback lease, and stores that.
_LEASE = (
    "CASE WHEN typeof(lease) IN ('integer', 'real') AND lease > 0"
    f" AND lease <= {_checks.MAX_SECONDS:.0f} THEN lease ELSE {_checks.FALLBACK_LEASE} END"
)


class _Choice(NamedTuple):
    seq: int
    vtime: float
    queue: str
    order: tuple[int, float, int]


class SQLiteStore(Reads, Steering, Schedules, Audit, Users, Logs, Store):
    """A :class:`~rota.stores.base.Store` on one SQLite file (``sqlite:///path``)."""

    kind = "sqlite"

    def now(self) -> float:
        return time.time()

    # -- producing ---------------------------------------------------------

    def enqueue(self, jobs: Sequence[NewJob]) -> list[EnqueueResult]:
        _checks.new_jobs(jobs)
        if not jobs:
            return []
        now = time.time()
        with self._write() as conn:
            results = self._enqueue(conn, jobs, now)
        _notify.notify(self.path)
        return results

    def _enqueue(
        self, conn: sqlite3.Connection, jobs: Sequence[NewJob], now: float
    ) -> list[EnqueueResult]:
        clocks: dict[str, float] = {}
        for queue in {job.queue for job in jobs}:
            conn.execute(Q["ensure_queue"], (queue,))
            clocks[queue] = conn.execute(Q["queue_clock"], (queue,)).fetchone()[0]
        lasts: dict[tuple[str, str], float] = {}
        rows: list[tuple[Any, ...]] = []
        results: list[EnqueueResult] = []
        held: dict[str, str] = {}  # unique keys taken earlier in this batch
        for job in jobs:
            if job.unique_key is not None:
                holder = held.get(job.unique_key) or unique_holder(conn, job.unique_key, now)
                if holder is not None:
                    results.append(EnqueueResult(holder, duplicate=True))
                    continue
                conn.execute(Q["hold_unique"], (job.unique_key, job.id))
                held[job.unique_key] = job.id
            fair = (job.queue, job.fair_key)
            if fair not in lasts:
                row = conn.execute(Q["fair_key_last"], fair).fetchone()
                lasts[fair] = row[0] if row else 0.0
            vtime = lasts[fair] = flow.virtual_start(lasts[fair], clocks[job.queue])
            run_at = job.run_at if job.run_at is not None else now + job.delay
            rows.append(
                (
                    job.id,
                    job.task,
                    job.queue,
                    "scheduled" if run_at > now else "queued",
                    job.payload,
                    job.priority,
                    vtime,
                    job.fair_key,
                    run_at,
                    now,
                    job.max_attempts,
                    job.max_lost,
                    job.lease,
                    job.timeout,
                    _limits.encode(job.concurrency, job.rate, job.breaker),
                    job.unique_key,
                    job.unique_for,
                    job.schedule,
                    job.fire_time,
                )
            )
            results.append(EnqueueResult(job.id))
        try:
            conn.executemany(Q["insert_job"], rows)
        except sqlite3.IntegrityError as exc:
            raise _refusal(conn, [row[0] for row in rows], exc) from None
        conn.executemany(Q["set_fair_key_last"], [(q, k, v) for (q, k), v in lasts.items()])
        return results

    # -- consuming ---------------------------------------------------------

    def claim(self, worker_id: str, queues: Sequence[str], limit: int) -> list[ClaimedJob]:
        _checks.claim(worker_id, queues, limit)
        if limit <= 0 or not queues:
            return []
        with self._write() as conn:
            now = time.time()  # read under the write lock: buckets never go back in time
            conn.execute(Q["promote_due"], (now,))
            conn.execute(Q["unpark_due"], (now,))
            paused = {row[0] for row in conn.execute(Q["paused_queues"])}
            book = _limits.LimitBook(conn, now)
            active = [queue for queue in dict.fromkeys(queues) if queue not in paused]
            chosen, parked = self._choose(conn, book, active, limit)
            conn.executemany(Q["park"], parked)
            if not chosen:
                return []
            book.save()
            token = secrets.token_hex(8)
            seqs = ",".join(str(c.seq) for c in chosen)
            rows = conn.execute(
                f"UPDATE jobs SET state = 'running', attempt = attempt + 1, lease_owner = ?,"
                f" lease_token = ? || ':' || seq, lease = {_LEASE}, lease_expires = ? + {_LEASE},"
                f" started_at = ?"
                f" WHERE seq IN ({seqs})"
                f" RETURNING id, task, queue, payload, attempt, max_attempts, lost,"
                f" lease_token, lease, timeout, enqueued_at, run_at, schedule, fire_time",
                (worker_id, token, now, now),
            ).fetchall()
            clocks: dict[str, float] = {}
            for c in chosen:
                clocks[c.queue] = max(clocks.get(c.queue, 0.0), c.vtime)
            conn.executemany(Q["advance_queue_clock"], [(v, q) for q, v in clocks.items()])
        return [
            ClaimedJob(
                id=r[0],
                task=r[1],
                queue=r[2],
                payload=r[3],
                attempt=r[4],
                max_attempts=r[5],
                lost=r[6],
                token=r[7],
                lease=r[8],
                timeout=r[9],
                enqueued_at=r[10],
                run_at=r[11],
                started_at=now,
                schedule=r[12],
                fire_time=r[13],
            )
            for r in rows
        ]

    @staticmethod
    def _choose(
        conn: sqlite3.Connection, book: _limits.LimitBook, queues: list[str], limit: int
    ) -> tuple[list[_Choice], list[tuple[str, float, int]]]:
        """Pick up to ``limit`` claimable jobs from ``queues``, best first. Slots
        and tokens are taken only for the jobs picked.

        Jobs found blocked are returned as ``(key, until, seq)`` to park: they
        leave the ready index until their key may let them run, so the next
        claims do not scan them again. Each claim scans a bounded number of
        rows in growing pages."""
        chosen: list[_Choice] = []
        parked: list[tuple[str, float, int]] = []
        page, offset, max_scan = max(16, limit * 2), 0, max(10_000, limit * 32)
        remaining = list(queues)
        while remaining and len(chosen) < limit and offset < max_scan:
            candidates = []
            for queue in list(remaining):
                rows = conn.execute(Q["ready_candidates"], (queue, page, offset)).fetchall()
                if len(rows) < page:
                    remaining.remove(queue)
                for seq, priority, vtime, raw_limits, job_id in rows:
                    candidates.append(
                        (_Choice(seq, vtime, queue, (-priority, vtime, seq)), raw_limits, job_id)
                    )
            candidates.sort(key=lambda c: c[0].order)
            for choice, raw_limits, job_id in candidates:
                limits = _limits.decode(raw_limits)
                block = book.admit(limits, job_id) if limits else None
                if block is not None:
                    parked.append((block.key, block.until, choice.seq))
                    continue
                chosen.append(choice)
                if len(chosen) >= limit:
                    break
            offset += page
            page *= 2
        return chosen, parked

    def extend(self, leases: Sequence[LeaseRef]) -> list[LeaseStatus]:
        _checks.leases(leases)
        if not leases:
            return []
        now = time.time()
        with self._write() as conn:
            rows = [
                conn.execute(Q["extend_lease"], (now, lease.job_id, lease.token)).fetchone()
                for lease in leases
            ]
        return [lease_status(row) for row in rows]

    def finish(self, outcomes: Sequence[Outcome]) -> list[bool]:
        _checks.outcomes(outcomes)
        if not outcomes:
            return []
        with self._write() as conn:
            now = time.time()  # under the write lock: finishes are recorded in time order
            minute = int(now // 60)
            rows = self._rows_by_id(conn, [o.job_id for o in outcomes])
            book = _limits.LimitBook(conn, now)
            done: list[tuple[Any, ...]] = []
            retries: list[tuple[Any, ...]] = []
            fails: list[tuple[Any, ...]] = []
            counts: Counter[tuple[str, str, bool]] = Counter()
            retried: Counter[tuple[str, str]] = Counter()
            applied: list[bool] = []
            hosts: dict[str, str | None] = {}
            debug = DebugPause(conn)
            for o in outcomes:
                row = rows.get(o.job_id)
                if row is None or row["state"] != "running" or row["lease_token"] != o.token:
                    applied.append(False)
                    continue
                applied.append(True)
                limits = _limits.decode(row["limits"])
                if row["cancel_at"] is not None:  # asked to stop: it ends so, whatever it did
                    if limits:
                        book.release(limits, o.job_id, None)
                    end_cancelled(conn, hosts, row, now)
                    continue
                counts[(row["queue"], row["task"], o.ok)] += 1
                if limits:
                    book.release(limits, o.job_id, o.ok)
                if o.ok:
                    entry = attempt_entry(conn, hosts, row, "succeeded", now)
                    done.append((o.result, now, entry, o.job_id))
                    settle_unique(conn, row, now, succeeded=True)
                    continue
                entry = attempt_entry(conn, hosts, row, "failed", now, error=o.error)
                debug.failed(row["queue"], o.job_id)
                tries = row["attempt"] - row["lost"]
                if o.retry_in is not None and tries < row["max_attempts"]:
                    retries.append((now + o.retry_in, o.error, o.traceback, entry, o.job_id))
                    retried[(row["queue"], row["task"])] += 1
                else:
                    fails.append((o.error, o.traceback, now, entry, o.job_id))
                    settle_unique(conn, row, now, succeeded=False)
            conn.executemany(Q["mark_succeeded"], done)
            conn.executemany(Q["mark_retry"], retries)
            conn.executemany(Q["mark_failed"], fails)
            book.save()
            self._unpark(conn, book)
            self._count(conn, minute, counts, retried)
        _notify.notify(self.path)  # freed slots and retries may unblock waiters
        return applied

    @staticmethod
    def _unpark(conn: sqlite3.Connection, book: _limits.LimitBook) -> None:
        """Bring back as many parked jobs of each key as it freed slots."""
        for key, count in book.freed.items():
            conn.execute(Q["unpark_key"], (key, count))

    @staticmethod
    def _count(
        conn: sqlite3.Connection,
        minute: int,
        counts: Counter[tuple[str, str, bool]],
        retried: Counter[tuple[str, str]] | None = None,
    ) -> None:
        """Add attempts to this minute's stats and the all-time totals:
        ``counts`` by (queue, task, ok), ``retried`` the failed ones retried."""
        merged: dict[tuple[str, str], list[int]] = {}
        for (queue, task, ok), n in counts.items():
            merged.setdefault((queue, task), [0, 0, 0])[0 if ok else 1] += n
        for (queue, task), n in (retried or {}).items():
            merged.setdefault((queue, task), [0, 0, 0])[2] += n
        rows = []
        for (queue, task), (good, bad, again) in merged.items():
            rows.append((minute, queue, task, good, bad, again))
            rows.append((0, queue, task, good, bad, again))
        conn.executemany(Q["count_stats"], rows)

    @staticmethod
    def _rows_by_id(conn: sqlite3.Connection, ids: Sequence[str]) -> dict[str, sqlite3.Row]:
        found: dict[str, sqlite3.Row] = {}
        conn.row_factory = sqlite3.Row
        try:
            for start in range(0, len(ids), _CHUNK):
                chunk = ids[start : start + _CHUNK]
                sql = Q["finish_rows"].format(ids=",".join("?" * len(chunk)))
                for row in conn.execute(sql, chunk):
                    found[row["id"]] = row
        finally:
            conn.row_factory = None
        return found

    def release(self, leases: Sequence[LeaseRef]) -> list[bool]:
        _checks.leases(leases)
        if not leases:
            return []
        now = time.time()
        with self._write() as conn:
            rows = self._rows_by_id(conn, [lease.job_id for lease in leases])
            book = _limits.LimitBook(conn, now)
            applied = []
            hosts: dict[str, str | None] = {}
            for lease in leases:
                row = rows.get(lease.job_id)
                ok = (
                    row is not None
                    and row["state"] == "running"
                    and (row["lease_token"] == lease.token)
                )
                applied.append(ok)
                if ok and row is not None:
                    limits = _limits.decode(row["limits"])
                    if limits:
                        book.release(limits, lease.job_id, None)
                    if row["cancel_at"] is not None:
                        end_cancelled(conn, hosts, row, now)
                        continue
                    entry = attempt_entry(conn, hosts, row, "released", now)
                    conn.execute(Q["mark_released"], (entry, lease.job_id))
            book.save()
            self._unpark(conn, book)
        _notify.notify(self.path)
        return applied

    def recover(self) -> list[str]:
        with self._write() as conn:
            now = time.time()  # under the write lock, as in finish
            conn.row_factory = sqlite3.Row
            try:
                rows = conn.execute(Q["expired_leases"], (now,)).fetchall()
            finally:
                conn.row_factory = None
            if not rows:
                return []
            book = _limits.LimitBook(conn, now)
            lost_for_good: Counter[tuple[str, str, bool]] = Counter()
            hosts: dict[str, str | None] = {}
            debug = DebugPause(conn)
            for row in rows:
                limits = _limits.decode(row["limits"])
                if limits:
                    book.release(limits, row["id"], None)
                if row["cancel_at"] is not None:
                    end_cancelled(conn, hosts, row, now)
                    continue
                entry = attempt_entry(conn, hosts, row, "lost", now)
                final = row["lost"] + 1 >= row["max_lost"]
                if final:
                    lost_for_good[(row["queue"], row["task"], False)] += 1
                    debug.failed(row["queue"], row["id"])
                    settle_unique(conn, row, now, succeeded=False)
                conn.execute(
                    Q["mark_lost"],
                    (
                        "failed" if final else "queued",
                        now,
                        "worker_lost" if final else None,
                        now if final else None,
                        entry,
                        row["id"],
                    ),
                )
            book.save()
            self._unpark(conn, book)
            self._count(conn, int(now // 60), lost_for_good)
        _notify.notify(self.path)
        return [row["id"] for row in rows]

    def wait(self, queues: Sequence[str], timeout: float) -> None:
        conn = self._waiter_conn()
        for query in ("next_due", "next_parked"):
            row = conn.execute(Q[query]).fetchone()
            if row and row[0] is not None:
                timeout = min(timeout, max(0.0, row[0] - time.time()))
        version = conn.execute("PRAGMA data_version").fetchone()[0]

        def changed() -> bool:
            return bool(conn.execute("PRAGMA data_version").fetchone()[0] != version)

        _notify.wait(self.path, timeout, changed)

    # -- workers -----------------------------------------------------------

    def heartbeat(self, worker: WorkerInfo) -> None:
        from dataclasses import asdict

        now = time.time()
        info = asdict(worker) | {"heartbeat_at": now}
        with self._write() as conn:
            conn.execute(Q["save_worker"], (worker.id, now, _json.dumps(info)))

    def remove_worker(self, worker_id: str) -> None:
        _checks.text(worker_id, "worker id")
        with self._write() as conn:
            conn.execute("DELETE FROM workers WHERE id = ?", (worker_id,))


def attempt_entry(
    conn: sqlite3.Connection,
    hosts: dict[str, str | None],
    row: sqlite3.Row,
    event: str,
    now: float,
    **extra: str | float | None,
) -> bytes:
    """The history entry of the attempt that ends with ``event``: its number,
    the worker that held its lease and that worker's host, as its heartbeat
    record gives it (None once the record is gone). ``hosts`` caches the
    hosts looked up in one transaction."""
    worker = row["lease_owner"]
    if worker is not None and worker not in hosts:
        found = conn.execute(Q["worker_host"], (worker,)).fetchone()
        hosts[worker] = found[0] if found and isinstance(found[0], str) else None
    entry = {"attempt": row["attempt"], "event": event, "worker": worker}
    entry["host"] = hosts.get(worker) if worker is not None else None
    return _json.dumps(entry | extra | {"at": now})


def end_cancelled(
    conn: sqlite3.Connection, hosts: dict[str, str | None], row: sqlite3.Row, now: float
) -> None:
    """End the running job of ``row``, which was asked to stop, as cancelled,
    whatever its attempt reported: a history entry names who asked (``by``)
    and when (``requested_at``); its unique key is freed. The caller frees
    its limit slots."""
    entry = attempt_entry(
        conn, hosts, row, "cancelled", now, by=row["cancel_by"], requested_at=row["cancel_at"]
    )
    conn.execute(Q["mark_cancelled"], (now, entry, row["id"]))
    settle_unique(conn, row, now, succeeded=False)


def lease_status(row: tuple[Any, ...] | None) -> LeaseStatus:
    """What ``extend_lease`` found: lost (no row), cancel (marked), held."""
    if row is None:
        return "lost"
    return "held" if row[0] is None else "cancel"


def _refusal(
    conn: sqlite3.Connection, ids: Sequence[str], exc: sqlite3.IntegrityError
) -> Exception:
    """What an insert of jobs ``ids`` refused by a constraint means: a reused
    id (named), else the constraint SQLite reports."""
    seen: set[str] = set()
    for job_id in ids:
        if job_id in seen or conn.execute(Q["job_exists"], (job_id,)).fetchone():
            return InvalidArgument(f"a job with id {job_id!r} already exists")
        seen.add(job_id)
    return StoreError(f"the store refused the jobs: {exc}")
