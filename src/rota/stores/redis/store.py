"""The Redis store: many machines on one Redis, every state change one Lua script.

Each verb that changes state is one script (``lua/*.lua``), so it is atomic
on the server and checks the state it expects; claims and finishes take a
whole batch in one round trip. The store's clock is Redis TIME. Batches that
must not act twice (enqueue, claim, finish, release, fire) carry a request id:
when a connection drops after the server ran the script, the retried call
gets the remembered reply instead of running again. Script calls ride out
outages in ``_run``; only verbs that also talk to Redis otherwise (blocking
waits, pipelines) are wrapped in ``guarded``.

A call that gives up (``StoreUnavailable`` after ``retry_for``) may still
run on the server: Redis runs what it has read once it resumes, with no one
left to read the reply. So a store instance keeps the claim (per worker) and
the finish and release batches whose calls gave up, and its next call of
that verb sends them again first, under their request ids: the remembered
reply comes back if the server ran them, else they run now. A send that gave
up after its request was written raises ``CommitInDoubt`` instead.

Workers wait on per-queue signal lists with BLPOP on a separate connection:
scripts that make work claimable push tokens (capped), and the wait is cut
short at the next delayed job's run time or when a sub-queue parked by a
rate limit or an open breaker may pass again.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rota._ids import unique_ids
from rota.errors import CommitInDoubt, RotaError, StoreUnavailable
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
from rota.stores.base import LeaseStatus, Store, WaitingClaims
from rota.stores.redis import _codec
from rota.stores.redis._audit import Audit
from rota.stores.redis._base import RedisBase, guarded
from rota.stores.redis._conn import MAX_BLOCK, RedisOptions, request_sent
from rota.stores.redis._logs import Logs
from rota.stores.redis._reads import Reads
from rota.stores.redis._steer import Steering
from rota.stores.redis._users import Users

_RECOVER_BATCH = 1000
#: extend.lua's reply per lease.
_LEASE_STATUS: tuple[LeaseStatus, ...] = ("lost", "held", "cancel")

_Item = Outcome | LeaseRef
_Key = tuple[str, str]  # an outcome's or a lease's (job id, token)


def _applied(flag: bytes) -> bool:
    """Whether a finish or release applied to its item (``b"1"`` or ``b"0"``)."""
    return flag == b"1"


def _key(item: _Item) -> _Key:
    return item.job_id, item.token


@dataclass(slots=True)
class _Unsettled:
    """The batches of one script (finish or release) whose calls gave up with
    :class:`StoreUnavailable`, each its arguments (request id first) and its
    items' keys, to be sent again before the next call of that script; and
    the answers they got then, kept ``until`` (monotonic) Redis forgets them."""

    script: str
    batches: list[tuple[list[bytes | str], list[_Key]]] = field(default_factory=list)
    answers: dict[_Key, bool] = field(default_factory=dict)
    until: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock)


@dataclass(frozen=True, slots=True)
class _UnsettledClaim:
    """A worker's claim that gave up: its arguments and when it began (monotonic)."""

    args: list[str]
    began: float


@dataclass(slots=True)
class _Idle:
    """A worker's idle registration as its store instance knows it."""

    worker_id: str
    queues: list[str]
    host: HostScope
    slots: int  # free slots it still offers
    wake_at: float  # monotonic: block no longer (registration ends, or work is due)
    token: str  # the token base of the claim that registered it
    since: float  # monotonic: when it was made; nothing was handed to it before
    received: set[str] = field(default_factory=set)  # tokens of the jobs popped from the inbox

    def matches(self, worker_id: str, queues: list[str], limit: int, host: HostScope) -> bool:
        """Whether a claim_wait call may block on this registration as it is."""
        return (
            self.worker_id == worker_id
            and self.queues == queues
            and self.host == host
            and 0 < self.slots <= limit
            and time.monotonic() < self.wake_at
        )


def _outcome_args(o: Outcome) -> list[bytes | str]:
    """finish.lua's arguments for one outcome."""
    has = (o.result is not None, o.error is not None, o.traceback is not None)
    return [
        o.job_id,
        o.token,
        f"{o.ok:d}{has[0]:d}{has[1]:d}{has[2]:d}{o.snooze:d}",
        o.result or b"",
        o.error or "",
        o.traceback or "",
        _codec.opt(None if o.retry_in is None else float(o.retry_in)),
        "\n".join(o.kinds),
    ]


def _lease_args(lease: LeaseRef) -> list[bytes | str]:
    return [lease.job_id, lease.token]


class RedisStore(Reads, Steering, Audit, Users, Logs, RedisBase, Store, WaitingClaims):
    """A :class:`~rota.stores.base.Store` on Redis (``redis://host:port/db?namespace=N``).

    Every key of a namespace shares the hash tag ``{rota:N}``, so a namespace
    fits one Redis Cluster slot. See ``keys.py`` for the key schema.
    """

    kind = "redis"

    def __init__(self, options: RedisOptions) -> None:
        super().__init__(options)
        # store time of this instance's latest claim per queue: wake-up tokens
        # older than it carry news that claim already saw
        self._claimed_at: dict[str, float] = {}
        # this instance's idle registration (claim_wait), if it may still hold
        self._idle: _Idle | None = None
        # a registration whose wait on the inbox failed, perhaps losing a delivery
        self._cut: _Idle | None = None
        # calls that gave up, perhaps to run on the server later (see the module's doc)
        self._claims: dict[str, _UnsettledClaim] = {}  # by worker id
        self._finishes = _Unsettled("finish")
        self._releases = _Unsettled("release")

    @classmethod
    def from_url(cls, url: str) -> RedisStore:
        """Open ``redis://``, ``rediss://`` or ``unix://`` URLs. Query options:
        ``namespace`` (default ``"default"``), ``retry_for`` (seconds to keep
        retrying through an outage, default 30), and any redis-py option."""
        return cls(RedisOptions.parse(url))

    # -- producing ---------------------------------------------------------

    def enqueue(self, jobs: Sequence[NewJob]) -> list[EnqueueResult]:
        if not jobs:
            return []
        _checks.new_jobs(jobs)
        args: list[bytes | str] = [self._request_id(), str(len(jobs))]
        for job in jobs:
            args += _codec.new_job_args(job)
        try:
            reply = self._run("enqueue", args)
        except StoreUnavailable as exc:
            if not request_sent():  # refused or cut before the request: not stored
                raise
            what = f"{len(jobs)} jobs ({jobs[0].id}, ...)" if len(jobs) > 1 else f"job {jobs[0].id}"
            raise CommitInDoubt(
                f"{exc}; the request had reached the server, so the {what} may have been stored "
                "(Redis runs what it has received when it answers again): look before sending "
                "again, or give the task a unique key, which makes a second send a duplicate"
            ) from exc
        return [
            EnqueueResult(reply[i].decode(), duplicate=reply[i + 1] == b"1")
            for i in range(0, len(reply), 2)
        ]

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
        self._idle = None
        if jobs := self._replay_claim(worker_id, limit):
            return jobs
        return self._claim(worker_id, list(dict.fromkeys(queues)), limit, 0.0, host=host)[0]

    def _replay_claim(self, worker_id: str, limit: int) -> list[ClaimedJob]:
        """The jobs of ``worker_id``'s claim that gave up, if it has one: sent
        again with its request id, it returns what Redis claimed when it ran
        that claim late (whose leases hold), or runs now. Jobs past ``limit``
        are released (all of them for a worker that leaves: ``limit`` 0).
        :attr:`_idle` is forgotten: a claim that runs ends the worker's idle
        registration."""
        unsettled = self._claims.pop(worker_id, None)
        if unsettled is None:
            return []
        self._idle = None
        try:
            reply = self._run("claim", unsettled.args)
            jobs = _codec.claimed_jobs(reply[2:])
            jobs = self._still_held(jobs, time.monotonic() - unsettled.began)
        except StoreUnavailable:
            self._claims[worker_id] = unsettled  # still unsettled
            raise
        if len(jobs) > limit:  # the worker has fewer free slots now
            with contextlib.suppress(StoreUnavailable):  # kept, sent with the next release
                self.release([LeaseRef(job.id, job.token) for job in jobs[limit:]])
            del jobs[limit:]
        return jobs

    def _claim(
        self,
        worker_id: str,
        queues: list[str],
        limit: int,
        idle_for: float,
        token: str = "",
        host: HostScope = ANY_HOST,
    ) -> tuple[list[ClaimedJob], float | None]:
        """Run the claim script (with ``token`` as the claim's token base, a fresh
        one by default); the jobs, and when nothing was claimed, in how many
        seconds the next delayed job or parked sub-queue is due."""
        token = token or unique_ids.next()
        args = [worker_id, str(limit), token, self._request_id(), repr(idle_for)]
        args += [host.name, repr(host.grace), *queues]
        began = time.monotonic()
        try:
            reply = self._run("claim", args)
        except StoreUnavailable:
            self._claims[worker_id] = _UnsettledClaim(args, began)
            raise
        at = float(reply[0])
        for queue in queues:
            self._claimed_at[queue] = at
        due = None if not reply[1] else float(reply[1]) - at
        return _codec.claimed_jobs(reply[2:]), due

    @guarded
    def claim_wait(
        self,
        worker_id: str,
        queues: Sequence[str],
        limit: int,
        timeout: float,
        host: HostScope = ANY_HOST,
    ) -> list[ClaimedJob]:
        """:meth:`claim`, then while idle: registered as idle (lua/_claim.lua),
        blocked on the worker's inbox, where new jobs arrive already claimed,
        and on the queues' signal lists. The registration lasts ``timeout``
        seconds; until then, calls that find it still has slots go straight
        back to blocking, without a claim round trip. When a wait fails (the
        connection dropped, perhaps with jobs on their way), the next call
        first takes back what the registration was handed and not received."""
        _checks.claim(worker_id, queues, limit, host)
        if limit <= 0 or not queues:
            return []
        if jobs := self._left_over(worker_id, limit):
            return jobs
        names = list(dict.fromkeys(queues))
        inbox = self.keys.inbox(worker_id)
        deadline = time.monotonic() + timeout
        interrupts = self._waits.interrupts
        for _ in range(1000):
            idle = self._idle
            if not (idle and idle.matches(worker_id, names, limit, host)):
                self._idle = None
                started, token = time.monotonic(), unique_ids.next()
                jobs, due = self._claim(worker_id, names, limit, max(timeout, 0.0), token, host)
                if jobs or timeout <= 0:
                    return jobs
                until = started + timeout
                if due is not None:
                    until = min(until, started + max(0.0, due))
                idle = self._idle = _Idle(worker_id, names, host, limit, until, token, started)
            remaining = min(deadline, idle.wake_at) - time.monotonic()
            if remaining < 0.001:
                self._idle = None  # look again: a claim promotes what is due
                return []
            popped = self._block(idle, inbox, min(remaining, MAX_BLOCK), interrupts)
            if popped is None:
                return []
            if _codec.text(popped[0]) == inbox:
                idle.slots, jobs = _codec.handed_jobs(popped[1])
                idle.received.update(job.token for job in jobs)
                if idle.slots <= 0:
                    self._idle = None
                return self._still_held(jobs, time.monotonic() - idle.since)
            if self._is_news(*popped):
                self._idle = None  # claim again
        return []

    def _left_over(self, worker_id: str, limit: int) -> list[ClaimedJob]:
        """Jobs that failed calls left for the worker: those handed to a
        registration whose wait was cut, else those of a claim that gave up."""
        if (cut := self._cut) is not None and (jobs := self._reclaim(cut)):
            return self._still_held(jobs, time.monotonic() - cut.since)
        return self._replay_claim(worker_id, limit)

    def _still_held(self, jobs: list[ClaimedJob], waited: float) -> list[ClaimedJob]:
        """The handed ``jobs`` whose leases still hold. A job waited in the
        inbox at most ``waited`` seconds (the registration's age), so its lease
        can have run out only when this process stalled (suspended, swapped
        out) for about as long as the lease: then each lease is checked, and a
        lost one is left to the worker the store has since given it to."""
        if not jobs or waited < min(job.lease for job in jobs) / 2:
            return jobs
        statuses = self.extend([LeaseRef(job.id, job.token) for job in jobs])
        return [job for job, status in zip(jobs, statuses, strict=True) if status != "lost"]

    def _block(self, idle: _Idle, inbox: str, block: float, interrupts: int) -> Any:
        """BLPOP on the inbox and the queues' signal lists; None, as on a
        timeout, at once when :meth:`interrupt_waits` was called since the
        wait began (``interrupts`` calls then). A failure marks the
        registration cut: Redis may have popped an inbox entry for nothing."""
        if self._waits.interrupted(interrupts):
            return None
        signals = (self.keys.signal(q) for q in idle.queues)
        try:
            return self._waits.call("BLPOP", inbox, *signals, block, block=block)
        except BaseException:
            self._cut, self._idle = idle, None
            raise

    def _reclaim(self, cut: _Idle) -> list[ClaimedJob]:
        """The jobs handed to registration ``cut`` that its worker did not
        receive (lua/reclaim_inbox.lua), and the registration ended."""
        reply = self._run("reclaim_inbox", [cut.worker_id, cut.token, *cut.queues])
        self._cut = None
        return [job for job in _codec.claimed_jobs(reply) if job.token not in cut.received]

    def _is_news(self, signal_key: bytes | str, stamp: bytes | str) -> bool:
        """Whether a wake-up token popped from a queue's signal list carries news:
        it does unless this instance claimed from that queue after the token was
        pushed (that claim already saw the change). Stale tokens are dropped and
        the wait goes on; a list holds at most 64 of them."""
        queue = _codec.text(signal_key)[len(self.keys.signal("")) :]
        return float(stamp) >= self._claimed_at.get(queue, 0.0)

    def extend(self, leases: Sequence[LeaseRef]) -> list[LeaseStatus]:
        if not leases:
            return []
        _checks.leases(leases)
        args = [part for lease in leases for part in (lease.job_id, lease.token)]
        return [_LEASE_STATUS[int(x)] for x in self._run("extend", args)]

    def finish(self, outcomes: Sequence[Outcome]) -> list[bool]:
        if not outcomes:
            return []
        _checks.outcomes(outcomes)
        return self._batch(self._finishes, outcomes, _outcome_args)

    def release(self, leases: Sequence[LeaseRef]) -> list[bool]:
        if not leases:
            return []
        _checks.leases(leases)
        return self._batch(self._releases, leases, _lease_args)

    def _batch(
        self,
        unsettled: _Unsettled,
        items: Sequence[_Item],
        parts: Callable[[Any], list[bytes | str]],
    ) -> list[bool]:
        """Run ``unsettled.script`` on ``items`` (``parts`` gives each one's
        arguments): one flag per item. After calls that gave up, their batches
        go first, again under their own request ids; an item that was in one
        of them takes the answer it got there (the server may have run it
        late), for as long as Redis remembers it; the others go in a new batch."""
        if not (unsettled.batches or unsettled.answers):
            return self._new_batch(unsettled, items, parts)
        with unsettled.lock:  # one thread at a time settles them
            if time.monotonic() > unsettled.until:  # Redis has forgotten those replies too
                unsettled.answers = {}
            answers = unsettled.answers
            while unsettled.batches:
                args, keys = unsettled.batches[0]
                try:
                    reply = self._run(unsettled.script, args)
                    answers.update(zip(keys, map(_applied, reply), strict=True))
                except StoreUnavailable:
                    raise
                except RotaError:  # refused now: its items reported again go in a new batch
                    pass
                del unsettled.batches[0]
                unsettled.until = time.monotonic() + self._remembered_for()
            rest = [item for item in items if _key(item) not in answers]
            fresh = dict(zip(map(_key, rest), self._new_batch(unsettled, rest, parts), strict=True))
            return [answers[k] if k in answers else fresh[k] for k in map(_key, items)]

    def _new_batch(
        self,
        unsettled: _Unsettled,
        items: Sequence[_Item],
        parts: Callable[[Any], list[bytes | str]],
    ) -> list[bool]:
        """``items`` in one call of ``unsettled.script``, kept there when it gives up."""
        if not items:
            return []
        args: list[bytes | str] = [self._request_id()]
        for item in items:
            args += parts(item)
        try:
            reply = self._run(unsettled.script, args)
        except StoreUnavailable:
            unsettled.batches.append((args, list(map(_key, items))))
            raise
        return [_applied(x) for x in reply]

    def recover(self) -> list[str]:
        recovered: list[str] = []
        for _ in range(100):  # bounded: at most 100,000 per call
            batch = self._run("recover", [str(_RECOVER_BATCH)])
            recovered += [x.decode() for x in batch]
            if len(batch) < _RECOVER_BATCH:
                break
        return recovered

    def interrupt_waits(self) -> None:
        """End the waits blocked on the server now (``CLIENT UNBLOCK``: their
        ``BLPOP`` answers as if it had timed out), and the ones about to
        block before they do. A wait that began after this call waits."""
        self._waits.interrupt(self._client)

    @guarded
    def wait(self, queues: Sequence[str], timeout: float) -> None:
        if timeout <= 0 or not queues:
            return
        pipe = self._client.pipeline(transaction=False)
        for queue in queues:  # the next delayed job, the next parked sub-queue
            pipe.zrange(self.keys.delayed(queue), 0, 0, withscores=True)
            pipe.zrange(self.keys.parked(queue), 0, 0, withscores=True)
        pipe.time()
        *heads, (seconds, micros) = pipe.execute()
        now = float(seconds) + micros / 1_000_000
        for head in heads:
            if head:
                timeout = min(timeout, head[0][1] - now)
        timeout = min(timeout, MAX_BLOCK)
        if timeout < 0.001:
            return  # a delayed job or a parked sub-queue is due now
        signals = [self.keys.signal(q) for q in queues]
        deadline = time.monotonic() + timeout
        interrupts = self._waits.interrupts
        for _ in range(1000):
            remaining = deadline - time.monotonic()
            if remaining < 0.001 or self._waits.interrupted(interrupts):
                return
            popped = self._waits.call("BLPOP", *signals, remaining, block=remaining)
            if popped is None:
                return
            if self._is_news(*popped):
                return

    # -- workers -----------------------------------------------------------

    def heartbeat(self, worker: WorkerInfo) -> None:
        self._run("heartbeat", [worker.id, _codec.worker_record(worker)])

    def stop_waiting(self, worker_id: str) -> None:
        self._forget_idle(worker_id)
        self._run("stop_waiting", [worker_id])

    def remove_worker(self, worker_id: str) -> None:
        self._forget_idle(worker_id)
        self._replay_claim(worker_id, 0)  # what a claim that gave up took goes back
        self._run("remove_worker", [worker_id])

    def _forget_idle(self, worker_id: str) -> None:
        if self._idle and self._idle.worker_id == worker_id:
            self._idle = None
