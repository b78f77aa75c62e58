"""Values exchanged between the app, the worker, the web UI and the stores.

A store returns them and nobody mutates them. Most are frozen dataclasses;
the two made for every job a worker runs (:class:`ClaimedJob`, which its
claim returns, and :class:`Outcome`, which it reports) are plain slotted
ones: a frozen dataclass sets each field through ``object.__setattr__``, a
cost every short job paid (docs/performance.md, "A job's records made
plainly").
Times are seconds since the epoch on the store's clock (guarantee 3).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from enum import StrEnum
from typing import Any

from rota import _json


class JobState(StrEnum):
    """Where a job is in its life: see the state diagram in docs/guarantees.md."""

    SCHEDULED = "scheduled"
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def finished(self) -> bool:
        """True for the three end states."""
        return self in FINISHED_STATES


PENDING_STATES = frozenset({JobState.SCHEDULED, JobState.QUEUED})
ACTIVE_STATES = PENDING_STATES | {JobState.RUNNING}
FINISHED_STATES = frozenset({JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED})


def parse_state(value: str) -> JobState:
    """Turn user input into a :class:`JobState`, or raise ``InvalidArgument``."""
    from rota.errors import InvalidArgument

    try:
        return JobState(value)
    except ValueError:
        names = ", ".join(s.value for s in JobState)
        raise InvalidArgument(f"unknown state {value!r}; expected one of: {names}") from None


@dataclass(frozen=True, slots=True)
class ConcurrencyKey:
    """At most ``limit`` running jobs carry ``key`` at once, cluster-wide."""

    key: str
    limit: int


@dataclass(frozen=True, slots=True)
class RateKey:
    """Jobs carrying ``key`` start at most ``rate`` per second, with bursts of ``burst``."""

    key: str
    rate: float
    burst: int


@dataclass(frozen=True, slots=True)
class BreakerKey:
    """After ``failures`` consecutive failures, jobs carrying ``key`` pause for
    ``cooldown`` s. A failure on an error of one of the ``ignore`` kinds
    (exception classes as :func:`rota.retry.error_kind` names them) counts
    neither way."""

    key: str
    failures: int
    cooldown: float
    ignore: tuple[str, ...] = ()


#: How long a host may go unseen before its jobs run anywhere (seconds).
DEFAULT_HOST_GRACE = 300.0


@dataclass(frozen=True, slots=True)
class HostScope:
    """Which host-targeted jobs a claim may take.

    A job sent with a ``host`` runs on a worker of that host name (``name``,
    by default the machine's hostname) while one serving its queue is alive.
    Any worker serving the queue takes it once none has been seen for
    ``grace`` seconds: counted from the last heartbeat of that host's workers
    on the queue, or from the job's send when the store never saw one. Jobs
    without a host run anywhere. An empty ``name`` serves no host of its own.
    """

    name: str = ""
    grace: float = DEFAULT_HOST_GRACE


#: The scope of a claim that names no host: jobs of no host, and jobs of
#: hosts gone for the default grace.
ANY_HOST = HostScope()


@dataclass(frozen=True, slots=True)
class NewJob:
    """A job as the app hands it to :meth:`Store.enqueue`.

    ``payload`` is the JSON encoding of ``{"args": [...], "kwargs": {...}}``.
    The run time is ``run_at`` when given (absolute), else the store's now plus
    ``delay``. Limit keys were resolved at send time, so the store never runs
    user code.
    """

    id: str
    task: str
    queue: str
    payload: bytes
    priority: int = 0
    delay: float = 0.0
    run_at: float | None = None
    max_attempts: int = 1
    max_lost: int = 3
    lease: float = 30.0
    timeout: float | None = None
    concurrency: tuple[ConcurrencyKey, ...] = ()
    rate: tuple[RateKey, ...] = ()
    breaker: tuple[BreakerKey, ...] = ()
    unique_key: str | None = None
    unique_for: float | None = None
    schedule: str | None = None
    fire_time: float | None = None
    #: Run only by workers of this host name (see :class:`HostScope`); None: any.
    host: str | None = None
    #: How failed attempts are retried, as :meth:`rota.retry.RetryPolicy.encode`
    #: wrote it (None: the default policy). Stored with the job and claimed with it.
    retry: str | None = None

    @property
    def limit_keys(self) -> tuple[str, ...]:
        """Every key this job's flow control depends on, in declaration order."""
        keys = [c.key for c in self.concurrency] + [r.key for r in self.rate]
        keys += [b.key for b in self.breaker]
        return tuple(dict.fromkeys(keys))

    def limits_field(self) -> bytes | None:
        """The job's flow-control keys as every store keeps them, or None when
        it has none: ``{"c": [[key, limit]], "r": [[key, rate, burst]],
        "b": [[key, failures, cooldown]]}``, a breaker entry ending with the
        kinds it ignores when there are some."""
        if not (self.concurrency or self.rate or self.breaker):
            return None
        return _json.dumps(
            {
                "c": [[c.key, c.limit] for c in self.concurrency],
                "r": [[r.key, float(r.rate), r.burst] for r in self.rate],
                "b": [
                    [b.key, b.failures, float(b.cooldown), *([list(b.ignore)] if b.ignore else [])]
                    for b in self.breaker
                ],
            }
        )

    @property
    def fair_key(self) -> str:
        """The key jobs are rotated over for fairness: the most restrictive
        concurrency key (the one most likely to block), else the first rate or
        breaker key, else "" (jobs without limit keys share one FIFO sub-queue
        per queue). Rotating over the blocking key keeps a backlog of one
        blocked key from hiding the jobs of other keys behind it."""
        if self.concurrency:
            return min(self.concurrency, key=lambda c: c.limit).key
        keys = self.limit_keys
        return keys[0] if keys else ""


@dataclass(frozen=True, slots=True)
class EnqueueResult:
    """What happened to one :class:`NewJob`: its id, and whether it was a duplicate
    (then ``id`` is the id of the existing job with the same unique key)."""

    id: str
    duplicate: bool = False


@dataclass(slots=True)
class ClaimedJob:
    """A job leased to one worker. ``token`` fences every later report on it."""

    id: str
    task: str
    queue: str
    payload: bytes
    attempt: int
    max_attempts: int
    lost: int
    token: str
    lease: float
    timeout: float | None
    enqueued_at: float
    run_at: float
    started_at: float
    schedule: str | None = None
    fire_time: float | None = None
    #: The job's retry policy, as sent (:attr:`NewJob.retry`).
    retry: str | None = None


@dataclass(frozen=True, slots=True)
class LeaseRef:
    """A claim on a job, as returned by :meth:`Store.claim`."""

    job_id: str
    token: str


@dataclass(slots=True)
class Outcome:
    """The result of one attempt, reported with :meth:`Store.finish`.

    ``ok`` with ``result`` (JSON bytes), or not ``ok`` with ``error`` and
    ``traceback``. On failure ``retry_in`` asks for another attempt after that
    many seconds; the store grants it only while attempts remain. A
    ``snooze`` (not ``ok``, with ``retry_in``) is not counted as an attempt:
    the job is scheduled at ``now() + retry_in`` with its attempt number
    stepped back, ``error`` saying why, and no history entry.

    ``kinds`` names a failure's exception class and its base classes (as
    :func:`rota.retry.error_kind`), for the job's breakers that ignore some.
    """

    job_id: str
    token: str
    ok: bool
    result: bytes | None = None
    error: str | None = None
    traceback: str | None = None
    retry_in: float | None = None
    snooze: bool = False
    kinds: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Job:
    """A job as the store holds it, for inspection (dashboard, CLI, handles).

    ``error`` and ``traceback`` are those of the job's latest failed
    attempt, and stay when a later attempt succeeds: ``if job.error`` does
    not mean the job failed, read ``state``. Every failed attempt's error is
    also in ``history``; the dashboard shows a succeeded job's as an earlier
    error, ``GET /api/jobs/ID`` and ``rota jobs show`` leave it out. After a
    :class:`~rota.errors.Snooze`, ``error`` is its reason and ``traceback``
    None, kept too if the job then succeeds. A job parked as failed after
    too many lost attempts has the error ``worker_lost``.
    """

    id: str
    task: str
    queue: str
    state: JobState
    args: list[Any]
    kwargs: dict[str, Any]
    priority: int
    run_at: float
    enqueued_at: float
    attempt: int
    max_attempts: int
    lost: int
    started_at: float | None = None
    finished_at: float | None = None
    worker: str | None = None
    lease_expires: float | None = None
    result: Any = None
    error: str | None = None
    traceback: str | None = None
    history: tuple[dict[str, Any], ...] = ()
    limit_keys: tuple[str, ...] = ()
    unique_key: str | None = None
    schedule: str | None = None
    fire_time: float | None = None
    host: str | None = None
    #: The job's retry policy, as sent (:attr:`NewJob.retry`).
    retry: str | None = None


@dataclass(frozen=True, slots=True)
class JobQuery:
    """Filters for :meth:`Store.list_jobs`; ``None`` means any."""

    queue: str | None = None
    task: str | None = None
    state: JobState | None = None
    schedule: str | None = None
    search: str | None = None


@dataclass(frozen=True, slots=True)
class JobPage:
    """One page of jobs, newest first; pass ``next_cursor`` back for the next page."""

    jobs: tuple[Job, ...]
    next_cursor: str | None


#: The modes of a queue: ``running`` (jobs are claimed), ``paused`` (none
#: are; the queue keeps accepting them), ``debug`` (jobs are claimed until the
#: first failed attempt, which pauses the queue and links that job).
QUEUE_MODES = ("running", "paused", "debug")


@dataclass(frozen=True, slots=True)
class QueueInfo:
    """A queue's mode and its job counts by state.

    ``debug_job`` is the job whose failed attempt paused the queue while it
    was in ``debug`` mode (the mode is then ``paused``); None otherwise.
    ``paused`` follows the mode: True exactly when it is ``paused``.
    """

    name: str
    mode: str = "running"
    counts: dict[JobState, int] = field(default_factory=dict)
    debug_job: str | None = None
    paused: bool = field(default=False, init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "paused", self.mode == "paused")


@dataclass(frozen=True, slots=True)
class MinuteStats:
    """Attempts that ended in one minute (``minute`` = epoch seconds // 60) for a
    queue and task: ``failed`` counts every failed attempt, ``retried`` those
    of them after which the job was scheduled to run again."""

    minute: int
    queue: str
    task: str
    succeeded: int
    failed: int
    retried: int = 0


@dataclass(frozen=True, slots=True)
class WorkerInfo:
    """A worker's heartbeat record."""

    id: str
    host: str
    pid: int
    queues: tuple[str, ...]
    concurrency: int
    mode: str
    running: int
    started_at: float
    heartbeat_at: float = 0.0
    cpu_percent: float | None = None
    mem_percent: float | None = None
    holding_back: bool = False
    stopping: bool = False
    processed: int = 0
    failed: int = 0
    #: Unexpected errors its threads and child processes survived (each logged).
    errors: int = 0
    #: Timed-out jobs still running on threads that gave their slot away.
    stuck: int = 0
    #: The worker process's share of the machine's CPU (0 to 1; see
    #: ``rota.worker.load``), None before its first reading.
    load: float | None = None
    #: Whether its latest claim brought fewer jobs than it asked for: the
    #: queues had no more for it, so it could take more work now (see
    #: ``rota.worker.load``). Records of workers that do not report it read
    #: True.
    claimed_short: bool = True

    @classmethod
    def from_record(cls, info: dict[str, Any]) -> WorkerInfo:
        """The record a heartbeat stored (decoded JSON); fields this version
        does not know (from a newer worker of a mixed fleet) are left out."""
        known = {name: value for name, value in info.items() if name in _WORKER_FIELDS}
        known["queues"] = tuple(known["queues"])
        return cls(**known)


_WORKER_FIELDS = frozenset(field.name for field in fields(WorkerInfo))


@dataclass(frozen=True, slots=True)
class LimitInfo:
    """The state of one flow-control key across the cluster."""

    key: str
    running: int = 0
    concurrency: int | None = None
    rate: float | None = None
    burst: int | None = None
    tokens: float | None = None
    failures: int = 0
    open_until: float | None = None
    override: int | None = None
    #: The rate set at run time (``set_rate``) in place of the jobs' own.
    rate_override: float | None = None

    @property
    def rate_in_force(self) -> float | None:
        """The rate the store applies: the override, else the jobs' own."""
        return self.rate_override if self.rate_override is not None else self.rate


@dataclass(frozen=True, slots=True)
class Schedule:
    """A schedule as the store holds it.

    ``trigger`` is the trigger's JSON description (see ``rota.scheduling``);
    ``payload`` is encoded as for :class:`NewJob`. ``job_options`` carries the
    NewJob fields the fired jobs get (queue, priority, retries, limits).
    """

    name: str
    task: str
    trigger: dict[str, Any]
    payload: bytes
    next_fire: float | None
    enabled: bool = True
    misfire: str = "coalesce"
    grace: float | None = None
    overlap: str = "allow"
    jitter: float = 0.0
    job_options: dict[str, Any] = field(default_factory=dict)
    last_fire: float | None = None
    last_job_id: str | None = None
    skipped: int = 0


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """One operator action as the audit log keeps it: who (``actor``, its
    ``role``), through what (``origin``: python, cli, web or api; ``address``:
    the client's host), what (``action`` such as ``"queue.pause"``, on
    ``target``, with JSON ``details``) and when (``at``, store clock; 0 asks
    the store to fill it in)."""

    at: float
    actor: str
    role: str
    origin: str
    address: str | None
    action: str
    target: str
    details: dict[str, Any] = field(default_factory=dict)


#: The streams of a job's log: its ``current_job().logger`` records (``log``),
#: what it writes to ``stdout`` and ``stderr``, and notes of rota's own
#: (``rota``, e.g. that the oldest lines were dropped over the cap).
LOG_STREAMS = ("log", "stdout", "stderr", "rota")


@dataclass(frozen=True, slots=True)
class LogChunk:
    """A piece of what one attempt of a job wrote: ``data`` (text, usually
    whole lines) on ``stream`` at ``at``. ``seq`` orders a job's chunks; the
    store assigns it (0 in a chunk to append)."""

    job_id: str
    attempt: int
    stream: str
    data: str
    at: float = 0.0
    seq: int = 0


#: The roles of a user, each including the ones before it: ``viewer`` reads,
#: ``operator`` also acts on queues, jobs, limits and schedules, ``admin``
#: also manages users.
USER_ROLES = ("viewer", "operator", "admin")


@dataclass(frozen=True, slots=True)
class User:
    """A dashboard and API user as the store holds it.

    ``password_hash`` is an Argon2 hash (never the password); ``tokens`` are
    the labels of the user's API tokens, sorted (the secrets are never kept,
    only their SHA-256 hashes, which the store does not return).
    """

    name: str
    role: str
    password_hash: str
    created_at: float = 0.0
    tokens: tuple[str, ...] = ()
