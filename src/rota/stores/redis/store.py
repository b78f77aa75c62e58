"""The Redis store: many machines on one Redis, every state change one Lua script.

Each verb that changes state is one script (``lua/*.lua``), so it is atomic
on the server and checks the state it expects; claims and finishes take a
whole batch in one round trip. The store's clock is Redis TIME. Batches that
must not act twice (enqueue, claim, finish, release, fire) carry a request id:
when a connection drops after the server ran the script, the retried call
gets the remembered reply instead of running again. Script calls ride out
outages in ``_run``; only verbs that also talk to Redis otherwise (blocking
waits, pipelines) are wrapped in ``guarded``.

Workers wait on per-queue signal lists with BLPOP on a separate connection:
scripts that make work claimable push tokens (capped), and the wait is cut
short at the next delayed job's run time or when a sub-queue parked by a
rate limit or an open breaker may pass again.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rota._ids import unique_ids
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
from rota.stores.redis._conn import MAX_BLOCK, RedisOptions
from rota.stores.redis._logs import Logs
from rota.stores.redis._reads import Reads
from rota.stores.redis._steer import Steering
from rota.stores.redis._users import Users

_RECOVER_BATCH = 1000
#: extend.lua's reply per lease.
_LEASE_STATUS: tuple[LeaseStatus, ...] = ("lost", "held", "cancel")


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
        reply = self._run("enqueue", args)
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
        return self._claim(worker_id, list(dict.fromkeys(queues)), limit, 0.0, host=host)[0]

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
        reply = self._run("claim", args)
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
        if (cut := self._cut) is not None and (jobs := self._reclaim(cut)):
            return self._still_held(jobs, time.monotonic() - cut.since)
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
        args: list[bytes | str] = [self._request_id()]
        for o in outcomes:
            has = (o.result is not None, o.error is not None, o.traceback is not None)
            flags = f"{o.ok:d}{has[0]:d}{has[1]:d}{has[2]:d}{o.snooze:d}"
            args += [
                o.job_id,
                o.token,
                flags,
                o.result or b"",
                o.error or "",
                o.traceback or "",
                _codec.opt(None if o.retry_in is None else float(o.retry_in)),
                "\n".join(o.kinds),
            ]
        return [bool(x) for x in self._run("finish", args)]

    def release(self, leases: Sequence[LeaseRef]) -> list[bool]:
        if not leases:
            return []
        _checks.leases(leases)
        args = [self._request_id()]
        args += [part for lease in leases for part in (lease.job_id, lease.token)]
        return [bool(x) for x in self._run("release", args)]

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
        self._run("remove_worker", [worker_id])

    def _forget_idle(self, worker_id: str) -> None:
        if self._idle and self._idle.worker_id == worker_id:
            self._idle = None
