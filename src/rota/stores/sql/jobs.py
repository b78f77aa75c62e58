"""The atomic job verbs of the SQL engine: enqueue, claim, extend, finish,
release, recover, and the workers' heartbeats.

Every verb is one write transaction (:meth:`Database._transact`), whatever
the size of its batch. Claims take jobs in priority order, then by each
queue's virtual clock (fair keys), admitting each through the limit book;
jobs a busy key blocks are parked until it may let them run.
"""

from __future__ import annotations

import secrets
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict
from typing import Any, NamedTuple

from rota import _json, flow
from rota.errors import InvalidArgument, RotaError, StoreUnavailable
from rota.models import (
    ANY_HOST,
    ClaimedJob,
    EnqueueResult,
    HostScope,
    LeaseRef,
    NewJob,
    Outcome,
    WorkerInfo,
)
from rota.stores import _checks
from rota.stores.base import LeaseStatus
from rota.stores.sql import limits as _limits
from rota.stores.sql.modes import DebugPause, hold_debug_queues, lock_debug_queues
from rota.stores.sql.tx import Database, Refused, Tx
from rota.stores.sql.uniques import settle_unique, unique_holder

# A claim takes a job whose stored lease is not a sane duration (written by
# something other than rota) with the fallback lease, and stores that.
_LEASE_BOUNDS = (_checks.MAX_SECONDS, _checks.FALLBACK_LEASE)


class Held(NamedTuple):
    """A job row as the verbs that end or hand back an attempt read it
    (queries ``held_rows`` and ``expired_leases``)."""

    id: str
    lease_token: str | None
    state: str
    queue: str
    task: str
    attempt: int
    lost: int
    max_attempts: int
    max_lost: int
    limits: bytes | None
    unique_key: str | None
    unique_for: float | None
    lease_owner: str | None
    cancel_at: float | None
    cancel_by: str | None
    host: object  # the lease holder's host from its heartbeat record (a str, if readable)


class _Taken(NamedTuple):
    """The jobs a claim took: their rows, to be read once it committed."""

    rows: Callable[[], list[Any]]
    seqs: list[int]
    ids: list[str]  # in the claim's order, best first
    token: str
    now: float


class _Choice(NamedTuple):
    seq: int
    job_id: str
    vtime: float
    queue: str
    order: tuple[int, float, int]


class _FairTimes:
    """Fair-queuing virtual times handed to new jobs, from their queues'
    clocks and their fair keys' last times (:func:`rota.flow.virtual_start`)."""

    def __init__(self, tx: Tx, jobs: Sequence[NewJob]) -> None:
        """Make the jobs' queues and read their clocks and keys' last times.
        Every read is sent before the first is read: a dialect that pipelines
        statements reads them in one round trip."""
        queues = sorted({job.queue for job in jobs})
        for queue in queues:
            tx.execute("ensure_queue", (queue,))
        clock_rows = {queue: tx.execute("queue_clock", (queue,)) for queue in queues}
        fairs = dict.fromkeys((job.queue, job.fair_key) for job in jobs)
        last_rows = {fair: tx.execute("fair_key_last", fair) for fair in fairs}
        self._clocks = {q: cursor.fetchone()[0] for q, cursor in clock_rows.items()}
        self._known = {f: row[0] if (row := c.fetchone()) else 0.0 for f, c in last_rows.items()}
        self._lasts: dict[tuple[str, str], float] = {}  # the keys given a time

    def take(self, job: NewJob) -> float:
        """The virtual time of ``job``, one round after its key's last."""
        fair = (job.queue, job.fair_key)
        last = self._lasts.get(fair, self._known[fair])
        self._lasts[fair] = flow.virtual_start(last, self._clocks[job.queue])
        return self._lasts[fair]

    def record(self, tx: Tx) -> None:
        """Store the last time given to each key."""
        tx.executemany(
            "set_fair_key_last", [(q, k, v) for (q, k), v in sorted(self._lasts.items())]
        )


class Jobs(Database):
    """The job verbs of the store contract, on any SQL dialect."""

    # -- producing ---------------------------------------------------------

    def enqueue(self, jobs: Sequence[NewJob]) -> list[EnqueueResult]:
        _checks.new_jobs(jobs)
        if not jobs:
            return []
        try:
            return self._transact(lambda tx: self._enqueue(tx, jobs))
        except Refused as refused:
            raise self._name_taken_id([job.id for job in jobs], refused) from None

    def _name_taken_id(self, ids: Sequence[str], refused: Refused) -> RotaError:
        """Why the store refused a batch ``ids`` (rolled back whole): the id it
        reused, of a stored job or of an earlier job of the batch, named; or
        ``refused`` itself when no id was reused."""
        seen: set[str] = set()
        with self._read() as tx:
            for job_id in ids:
                if job_id in seen or tx.execute("job_exists", (job_id,)).fetchone():
                    return InvalidArgument(f"a job with id {job_id!r} already exists")
                seen.add(job_id)
        return refused

    def _virtual_times(self, tx: Tx, jobs: Sequence[NewJob]) -> list[float]:
        """Virtual times for ``jobs``, taken (and their keys' last times
        recorded) in ``tx``, for :meth:`_enqueue` in another transaction."""
        fair = _FairTimes(tx, jobs)
        vtimes = [fair.take(job) for job in jobs]
        fair.record(tx)
        return vtimes

    def _enqueue(
        self, tx: Tx, jobs: Sequence[NewJob], vtimes: Sequence[float] | None = None
    ) -> list[EnqueueResult]:
        """Store ``jobs`` in ``tx``: at ``vtimes`` (from :meth:`_virtual_times`)
        when given, else at virtual times taken in ``tx`` by the jobs stored."""
        fair = _FairTimes(tx, jobs) if vtimes is None else None
        given = list(vtimes or ())
        now = tx.now()
        rows: list[tuple[Any, ...]] = []
        results: list[EnqueueResult] = []
        held: dict[str, str] = {}  # unique keys taken earlier in this batch
        for index, job in enumerate(jobs):
            if job.unique_key is not None:
                holder = held.get(job.unique_key) or unique_holder(
                    tx, job.unique_key, now, lock=True
                )
                if holder is not None:
                    results.append(EnqueueResult(holder, duplicate=True))
                    continue
                tx.execute("hold_unique", (job.unique_key, job.id))
                held[job.unique_key] = job.id
            vtime = fair.take(job) if fair is not None else given[index]
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
                    job.limits_field(),
                    job.unique_key,
                    job.unique_for,
                    job.schedule,
                    job.fire_time,
                    job.host,
                    job.retry,
                )
            )
            results.append(EnqueueResult(job.id))
        if fair is not None:
            fair.record(tx)
        tx.wake()
        # Nothing is read back: a reused id makes the insert fail (and the
        # transaction with it), here or, where the dialect pipelines, at commit.
        try:
            tx.executemany("insert_job", rows)
        except Exception as exc:
            if not tx.is_constraint_error(exc):
                raise
            raise Refused(f"the store refused the jobs: {exc}") from None
        return results

    # -- consuming ---------------------------------------------------------

    def claim(
        self,
        worker_id: str,
        queues: Sequence[str],
        limit: int,
        host: HostScope = ANY_HOST,
    ) -> list[ClaimedJob]:
        _checks.claim(worker_id, queues, limit, host)
        if limit <= 0 or not queues:
            return []
        # Not synced where safe: a claim lost to a power cut leaves its jobs queued
        # (Database._transact).
        taken = self._transact(
            lambda tx: self._claim(tx, worker_id, queues, limit, host), sync=False
        )
        if taken is None:
            return []
        try:
            rows = taken.rows()  # where the dialect pipelines: received with the commit
        except StoreUnavailable:  # the claim committed, but its reply was lost
            with self._read() as tx:
                rows = tx.rows_in("claimed_rows", taken.seqs, (taken.token,))
        return _claimed_jobs(rows, taken.ids, taken.now)

    def _claim(
        self, tx: Tx, worker_id: str, queues: Sequence[str], limit: int, host: HostScope
    ) -> _Taken | None:
        # Both read the store clock themselves, no later than the claim's own
        # read: they go out with the first candidates, and nothing waits for
        # the clock where the dialect pipelines.
        names = list(dict.fromkeys(queues))
        if self.orders_debug_queues:
            lock_debug_queues(tx, names)
        tx.execute("promote_due")
        tx.execute("unpark_due")
        chosen, parked, book = _choose(tx, names, limit, host)
        tx.executemany("park", parked)
        if not chosen:
            return None
        book.save()
        now = book.now
        clocks: dict[str, float] = {}
        for c in chosen:
            clocks[c.queue] = max(clocks.get(c.queue, 0.0), c.vtime)
        tx.executemany("advance_queue_clock", [(v, q) for q, v in sorted(clocks.items())])
        token = secrets.token_hex(8)
        params = (worker_id, token, *_LEASE_BOUNDS, now, *_LEASE_BOUNDS, now)
        seqs = [c.seq for c in chosen]
        ids = [c.job_id for c in chosen]
        return _Taken(tx.rows_in_later("claim_rows", seqs, params), seqs, ids, token, now)

    def extend(self, leases: Sequence[LeaseRef]) -> list[LeaseStatus]:
        _checks.leases(leases)
        if not leases:
            return []

        # Rows are taken in id order, as a finish takes them (held_rows): in
        # another order a renewal and a finish of the same jobs deadlock, and
        # the server breaks it only after its deadlock timeout.
        in_id_order = sorted(range(len(leases)), key=lambda i: leases[i].job_id)

        def work(tx: Tx) -> list[LeaseStatus]:
            now = tx.now()
            asked = [(now, leases[i].job_id, leases[i].token) for i in in_id_order]
            statuses: list[LeaseStatus] = ["lost"] * len(leases)
            for i, row in zip(in_id_order, tx.first_rows("extend_lease", asked), strict=True):
                statuses[i] = lease_status(row)
            return statuses

        return self._transact(work)

    def finish(self, outcomes: Sequence[Outcome]) -> list[bool]:
        _checks.outcomes(outcomes)
        if not outcomes:
            return []
        return self._transact(lambda tx: self._finish(tx, outcomes))

    def _finish(self, tx: Tx, outcomes: Sequence[Outcome]) -> list[bool]:
        now = tx.now()  # in the transaction: finishes are recorded in time order
        rows = _held_by_id(tx, [o.job_id for o in outcomes])
        if self.orders_debug_queues:
            failing = [
                rows[o.job_id].queue
                for o in outcomes
                if not (o.ok or o.snooze) and o.job_id in rows
            ]
            now = hold_debug_queues(tx, failing, now)
        book = _limits.LimitBook(tx, now)
        limits_of = _decode_limits(rows.values())
        book.load(limits_of.values())
        done: list[tuple[Any, ...]] = []
        retries: list[tuple[Any, ...]] = []
        snoozes: list[tuple[Any, ...]] = []
        fails: list[tuple[Any, ...]] = []
        counts: Counter[tuple[str, str, bool]] = Counter()
        retried: Counter[tuple[str, str]] = Counter()
        applied: list[bool] = []
        debug = DebugPause(tx)
        for o in outcomes:
            row = rows.get(o.job_id)
            if row is None or row.state != "running" or row.lease_token != o.token:
                applied.append(False)
                continue
            applied.append(True)
            limits = limits_of.get(row.id)
            if row.cancel_at is not None:  # asked to stop: it ends so, whatever it did
                if limits:
                    book.release(limits, o.job_id, None)
                end_cancelled(tx, row, now)
                continue
            if o.snooze:
                if limits:
                    book.release(limits, o.job_id, None)
                snoozes.append((now + (o.retry_in or 0.0), o.error, o.job_id))
                continue
            counts[(row.queue, row.task, o.ok)] += 1
            if limits:
                book.release(limits, o.job_id, o.ok, o.kinds)
            if o.ok:
                entry = attempt_entry(row, "succeeded", now)
                done.append((o.result, now, entry, o.job_id))
                settle_unique(tx, row.unique_key, row.id, row.unique_for, now, succeeded=True)
                continue
            entry = attempt_entry(row, "failed", now, error=o.error)
            debug.failed(row.queue, o.job_id)
            tries = row.attempt - row.lost
            if o.retry_in is not None and tries < row.max_attempts:
                retries.append((now + o.retry_in, o.error, o.traceback, entry, o.job_id))
                retried[(row.queue, row.task)] += 1
            else:
                fails.append((o.error, o.traceback, now, entry, o.job_id))
                settle_unique(tx, row.unique_key, row.id, row.unique_for, now, succeeded=False)
        tx.executemany("mark_succeeded", done)
        tx.executemany("mark_retry", retries)
        tx.executemany("mark_snoozed", snoozes)
        tx.executemany("mark_failed", fails)
        book.save()
        _unpark(tx, book)
        count_attempts(tx, int(now // 60), counts, retried)
        if retries or snoozes or book.freed:  # work that may now start
            tx.wake()
        return applied

    def release(self, leases: Sequence[LeaseRef]) -> list[bool]:
        _checks.leases(leases)
        if not leases:
            return []
        return self._transact(lambda tx: self._release(tx, leases))

    def _release(self, tx: Tx, leases: Sequence[LeaseRef]) -> list[bool]:
        now = tx.now()
        rows = _held_by_id(tx, [lease.job_id for lease in leases])
        book = _limits.LimitBook(tx, now)
        limits_of = _decode_limits(rows.values())
        book.load(limits_of.values())
        applied = []
        for lease in leases:
            row = rows.get(lease.job_id)
            ok = row is not None and row.state == "running" and row.lease_token == lease.token
            applied.append(ok)
            if not ok or row is None:
                continue
            limits = limits_of.get(row.id)
            if limits:
                book.release(limits, lease.job_id, None)
            if row.cancel_at is not None:
                end_cancelled(tx, row, now)
                continue
            entry = attempt_entry(row, "released", now)
            tx.execute("mark_released", (entry, lease.job_id))
        book.save()
        _unpark(tx, book)
        if any(applied):
            tx.wake()
        return applied

    def recover(self) -> list[str]:
        return self._transact(self._recover)

    def _recover(self, tx: Tx) -> list[str]:
        now = tx.now()
        rows = [Held(*row) for row in tx.execute("expired_leases", (now,))]
        if not rows:
            return []
        if self.orders_debug_queues:
            now = hold_debug_queues(tx, [row.queue for row in rows], now)
        book = _limits.LimitBook(tx, now)
        limits_of = _decode_limits(rows)
        book.load(limits_of.values())
        lost_for_good: Counter[tuple[str, str, bool]] = Counter()
        debug = DebugPause(tx)
        for row in rows:
            limits = limits_of.get(row.id)
            if limits:
                book.release(limits, row.id, None)
            if row.cancel_at is not None:
                end_cancelled(tx, row, now)
                continue
            entry = attempt_entry(row, "lost", now)
            final = row.lost + 1 >= row.max_lost
            if final:
                lost_for_good[(row.queue, row.task, False)] += 1
                debug.failed(row.queue, row.id)
                settle_unique(tx, row.unique_key, row.id, row.unique_for, now, succeeded=False)
            tx.execute(
                "mark_lost",
                (
                    "failed" if final else "queued",
                    now,
                    "worker_lost" if final else None,
                    now if final else None,
                    entry,
                    row.id,
                ),
            )
        book.save()
        _unpark(tx, book)
        count_attempts(tx, int(now // 60), lost_for_good)
        tx.wake()
        return [row.id for row in rows]

    # -- workers -----------------------------------------------------------

    def heartbeat(self, worker: WorkerInfo) -> None:
        def work(tx: Tx) -> None:
            now = tx.now()
            info = asdict(worker) | {"heartbeat_at": now}
            tx.execute("save_worker", (worker.id, now, _json.dumps(info)))
            seen = sorted({(worker.host, queue, now) for queue in worker.queues})
            tx.executemany("save_host_seen", seen)

        self._transact(work)

    def remove_worker(self, worker_id: str) -> None:
        _checks.text(worker_id, "worker id")
        self._transact(lambda tx: tx.execute("delete_worker", (worker_id,)))


def _claimed_jobs(rows: list[Any], ids: list[str], now: float) -> list[ClaimedJob]:
    """The jobs a claim took, from the rows of ``claim_rows``, in the order
    the claim chose them (``ids``): the database gives the rows in its own
    order, and a worker runs the jobs of a batch in the order it gets them."""
    rank = {job_id: i for i, job_id in enumerate(ids)}
    rows = sorted(rows, key=lambda r: rank[r[0]])
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
            lease=float(r[8]),  # SQLite gives back 5.0 stored as 5
            timeout=None if r[9] is None else float(r[9]),
            enqueued_at=r[10],
            run_at=r[11],
            started_at=now,
            schedule=r[12],
            fire_time=r[13],
            retry=r[14],
        )
        for r in rows
    ]


def _choose(
    tx: Tx, queues: list[str], limit: int, host: HostScope
) -> tuple[list[_Choice], list[tuple[str, float, int]], _limits.LimitBook]:
    """Pick up to ``limit`` claimable jobs from ``queues`` (of the hosts
    ``host`` takes), best first, with
    the limit book (at the store clock, read in the transaction with the
    first candidates) that took their slots and tokens.

    Jobs found blocked are returned as ``(key, until, seq)`` to park: they
    leave the ready index until their key may let them run, so the next
    claims do not scan them again. Each claim scans a bounded number of rows
    in growing pages."""
    chosen: list[_Choice] = []
    parked: list[tuple[str, float, int]] = []
    page, offset, max_scan = max(16, limit), 0, max(10_000, limit * 32)
    remaining = list(queues)
    book: _limits.LimitBook | None = None
    while book is None or (remaining and len(chosen) < limit and offset < max_scan):
        candidates = []
        # every queue's page is asked for before any is read: one round trip
        # where the dialect pipelines
        asked = (host.name, host.grace, page, offset)
        pages = [(q, tx.execute("ready_candidates", (q, *asked))) for q in remaining]
        for queue, reply in pages:
            rows = reply.fetchall()
            if len(rows) < page:
                remaining.remove(queue)
            for seq, priority, vtime, raw_limits, job_id in rows:
                choice = _Choice(seq, job_id, vtime, queue, (-priority, vtime, seq))
                candidates.append((choice, raw_limits))
        if book is None:  # read in the transaction: buckets never go back in time
            book = _limits.LimitBook(tx, tx.now())
        candidates.sort(key=lambda c: c[0].order)
        decoded = [_limits.decode(raw) if raw else None for _, raw in candidates]
        book.load(decoded)
        for (choice, _), limits in zip(candidates, decoded, strict=True):
            block = book.admit(limits, choice.job_id) if limits else None
            if block is not None:
                parked.append((block.key, block.until, choice.seq))
                continue
            chosen.append(choice)
            if len(chosen) >= limit:
                break
        offset += page
        page *= 2
    return chosen, parked, book


def _decode_limits(rows: Iterable[Held]) -> dict[str, dict[str, Any]]:
    """The limit keys of each row that has some, decoded once, by job id."""
    return {row.id: _limits.decode(row.limits) or {} for row in rows if row.limits}


def _held_by_id(tx: Tx, ids: Sequence[str]) -> dict[str, Held]:
    return {row[0]: Held(*row) for row in tx.rows_in("held_rows", ids)}


def _unpark(tx: Tx, book: _limits.LimitBook) -> None:
    """Bring back as many parked jobs of each key as it freed slots."""
    for key, count in sorted(book.freed.items()):
        tx.execute("unpark_key", (key, count))


def count_attempts(
    tx: Tx,
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
    for (queue, task), (good, bad, again) in sorted(merged.items()):
        rows.append((minute, queue, task, good, bad, again))
        rows.append((0, queue, task, good, bad, again))
    tx.executemany("count_stats", rows)


def attempt_entry(row: Held, event: str, now: float, **extra: str | float | None) -> bytes:
    """The history entry of the attempt that ends with ``event``: its number,
    the worker that held its lease and that worker's host (None once its
    heartbeat record is gone)."""
    host = row.host if row.lease_owner is not None and isinstance(row.host, str) else None
    entry: dict[str, str | float | None] = {
        "attempt": row.attempt,
        "event": event,
        "worker": row.lease_owner,
        "host": host,
    }
    return _json.dumps_record(entry | extra | {"at": now}, what="history entry")


def end_cancelled(tx: Tx, row: Held, now: float) -> None:
    """End the running job of ``row``, which was asked to stop, as cancelled,
    whatever its attempt reported: a history entry names who asked (``by``)
    and when (``requested_at``); its unique key is freed. The caller frees
    its limit slots."""
    entry = attempt_entry(row, "cancelled", now, by=row.cancel_by, requested_at=row.cancel_at)
    tx.execute("mark_cancelled", (now, entry, row.id))
    settle_unique(tx, row.unique_key, row.id, row.unique_for, now, succeeded=False)


def lease_status(row: tuple[Any, ...] | None) -> LeaseStatus:
    """What ``extend_lease`` found: lost (no row), cancel (marked), held."""
    if row is None:
        return "lost"
    return "held" if row[0] is None else "cancel"
