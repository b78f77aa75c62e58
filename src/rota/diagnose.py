"""Why work is not happening: queues nobody serves, jobs sent to a host
whose workers are gone, jobs held by their flow-control keys, and schedules
nobody fires.

Read only through the store's inspection verbs (``workers()``, ``queues()``,
``schedules()``), so every store gets the same warnings; ``rota status``
and the dashboard's overview call :func:`diagnose`; a queued job's page,
``rota jobs show`` and :meth:`rota.JobHandle.result`'s timeout call
:func:`job_problem`.

Schedulers send no heartbeat, so a schedule whose next fire is more than
:data:`OVERDUE_AFTER` seconds in the past is the sign that none is running.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rota._time import format_duration
from rota.models import (
    DEFAULT_HOST_GRACE,
    Job,
    JobState,
    LimitInfo,
    QueueInfo,
    Schedule,
    WorkerInfo,
)
from rota.stores.base import Store

__all__ = [
    "HEARTBEAT_MAX",
    "LOST_AFTER",
    "OVERDUE_AFTER",
    "Problem",
    "diagnose",
    "host_problem",
    "is_overdue",
    "job_problem",
    "limit_problem",
    "live_workers",
    "overdue_schedules",
    "queue_problem",
    "unserved_queues",
]

#: A worker whose last heartbeat is older than this many seconds is lost:
#: three times the longest heartbeat interval (``rota worker --heartbeat``).
LOST_AFTER = 30.0
#: The longest heartbeat interval of a worker.
HEARTBEAT_MAX = LOST_AFTER / 3

#: A schedule whose next fire passed this many seconds ago is overdue: a
#: running scheduler fires within a second.
OVERDUE_AFTER = 30.0

_HINT_SCHEDULER = "is a scheduler running? (`rota scheduler` or `rota run`)"


@dataclass(frozen=True, slots=True)
class Problem:
    """One warning: its ``kind`` (``"unserved queue"`` or ``"overdue schedule"``),
    the queue or schedule it is about, and a sentence for people."""

    kind: str
    subject: str
    message: str


def live_workers(workers: Sequence[WorkerInfo], now: float) -> list[WorkerInfo]:
    """The workers that sent a heartbeat within :data:`LOST_AFTER` and are not stopping."""
    return [w for w in workers if now - w.heartbeat_at <= LOST_AFTER and not w.stopping]


def _served(workers: Sequence[WorkerInfo], now: float) -> set[str]:
    return {queue for w in live_workers(workers, now) for queue in w.queues}


def _unserved_message(queue: str, served: set[str]) -> str:
    serving = f"workers serve: {', '.join(sorted(served))}" if served else "no worker is live"
    return f"no live worker serves queue {queue!r} ({serving})"


def unserved_queues(
    queues: Sequence[QueueInfo], workers: Sequence[WorkerInfo], now: float
) -> list[Problem]:
    """Queues that are not paused, hold queued jobs, and that no live worker serves."""
    served = _served(workers, now)
    problems = []
    for info in queues:
        waiting = info.counts.get(JobState.QUEUED, 0)
        if waiting and not info.paused and info.name not in served:
            jobs = "job waits" if waiting == 1 else "jobs wait"
            message = f"{waiting} {jobs}: {_unserved_message(info.name, served)}"
            problems.append(Problem("unserved queue", info.name, message))
    return problems


def is_overdue(schedule: Schedule, now: float) -> bool:
    """Whether an enabled schedule's next fire passed more than :data:`OVERDUE_AFTER` ago."""
    return (
        schedule.enabled
        and schedule.next_fire is not None
        and now - schedule.next_fire > OVERDUE_AFTER
    )


def overdue_schedules(schedules: Sequence[Schedule], now: float) -> list[Problem]:
    """Enabled schedules whose next fire is overdue."""
    return [
        Problem(
            "overdue schedule",
            s.name,
            f"schedule {s.name!r} is overdue by {format_duration(now - (s.next_fire or now))}: "
            + _HINT_SCHEDULER,
        )
        for s in schedules
        if is_overdue(s, now)
    ]


def diagnose(
    store: Store,
    queues: list[QueueInfo] | None = None,
    workers: list[WorkerInfo] | None = None,
    schedules: list[Schedule] | None = None,
    now: float | None = None,
) -> list[Problem]:
    """Every unserved queue and overdue schedule of ``store``, queues first;
    ``queues``, ``workers``, ``schedules`` and ``now`` are what the caller
    has just read of it, read here when not given."""
    now = store.now() if now is None else now
    workers = store.workers() if workers is None else workers
    queues = store.queues() if queues is None else queues
    schedules = store.schedules() if schedules is None else schedules
    return unserved_queues(queues, workers, now) + overdue_schedules(schedules, now)


#: Why a job stays queued in inline mode (:mod:`rota.testing`), where no
#: worker ever runs: what can hold it there.
_INLINE_HELD = (
    "inline mode runs it once nothing holds it: a concurrency limit, rate limit or open "
    "breaker of its keys, or the running task that sent it (its jobs run after it returns)"
)


def host_problem(workers: Sequence[WorkerInfo], queue: str, host: str, now: float) -> str | None:
    """Why a queued job sent to ``host`` waits: no live worker of that host
    serves ``queue`` (a worker of another host takes it once the host has been
    gone for that worker's ``--host-grace``); None when one does."""
    if any(w.host == host and queue in w.queues for w in live_workers(workers, now)):
        return None
    return (
        f"no live worker of host {host!r} serves queue {queue!r}: a worker of another host "
        f"takes the job once host {host!r} has been gone from the queue for its --host-grace "
        f"({DEFAULT_HOST_GRACE / 60:g} minutes by default)"
    )


def queue_problem(
    store: Store, queue: str, *, inline: bool = False, host: str | None = None
) -> str | None:
    """Why jobs of ``queue`` may not be claimed: paused, or served by no live
    worker, or (for a job sent to ``host``) by none of that host; None when a
    live worker may claim them. ``inline``: the app runs its jobs in inline
    mode, where workers play no part (see :data:`_INLINE_HELD`)."""
    if any(info.name == queue and info.paused for info in store.queues()):
        return f"queue {queue!r} is paused"
    if inline:
        return _INLINE_HELD
    workers, now = store.workers(), store.now()
    served = _served(workers, now)
    if queue not in served:
        return _unserved_message(queue, served)
    return None if host is None else host_problem(workers, queue, host, now)


def limit_problem(keys: Sequence[str], limits: Sequence[LimitInfo], now: float) -> str | None:
    """Why a queued job with the flow-control ``keys`` waits, as ``limits``
    (the store's keys) say: a concurrency key whose slots are all taken, or
    that an operator holds at 0, or a breaker that is open; None when none
    of its keys holds it (a rate key only spaces jobs out)."""
    state = {info.key: info for info in limits}
    held: list[str] = []
    for key in keys:
        info = state.get(key)
        if info is None:
            continue
        limit = info.concurrency  # (the limit in force: an operator's override if set)
        if limit == 0:
            held.append(f"key {key!r} is held at 0 (`rota limits set`)")
        elif limit is not None and info.running >= limit:
            held.append(f"key {key!r} is at its limit ({info.running} running of {limit})")
        if info.open_until is not None and info.open_until > now:
            left = format_duration(info.open_until - now)
            held.append(f"the breaker of key {key!r} is open for {left} more")
    return "; ".join(held) or None


def job_problem(store: Store, job: Job, *, inline: bool = False) -> str | None:
    """Why the queued ``job`` is not taken now: its queue's or its host's
    (:func:`queue_problem`), else its flow-control keys' (:func:`limit_problem`);
    None when nothing holds it but the work ahead of it."""
    problem = queue_problem(store, job.queue, inline=inline, host=job.host)
    if problem is None and job.limit_keys:
        return limit_problem(job.limit_keys, store.limits(), store.now())
    return problem
