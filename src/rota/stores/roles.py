"""The roles of the store protocol; :class:`rota.stores.base.Store` is all of them.

Each role is one group of verbs that a backend implements, usually as one
mixin: :class:`JobStore` (the atomic job verbs), :class:`SteeringStore`
(operator actions), :class:`ScheduleStore`, :class:`InspectionStore` (read
only), :class:`AuditStore`, :class:`JobLogStore` and :class:`UserStore`.
:class:`WaitingClaims` is optional: a store whose claim can wait for work
implements it, and :func:`claim_or_wait` falls back to claim, wait, claim on
the others. The conventions (one atomic step per verb, the store's clock) are
those of :mod:`rota.stores.base`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Literal

from rota.errors import AmbiguousJobId, JobNotFound
from rota.models import (
    ANY_HOST,
    AuditEntry,
    ClaimedJob,
    EnqueueResult,
    HostScope,
    Job,
    JobPage,
    JobQuery,
    LeaseRef,
    LimitInfo,
    LogChunk,
    MinuteStats,
    NewJob,
    Outcome,
    QueueInfo,
    Schedule,
    User,
    WorkerInfo,
)

FireResult = Literal["fired", "skipped", "dropped", "conflict"]
#: What :meth:`JobStore.extend` found for a lease.
LeaseStatus = Literal["held", "lost", "cancel"]

#: The fewest characters of a job id accepted as a prefix of it.
MIN_PREFIX = 6
_CANDIDATES = 5  # ids an ambiguous prefix error lists

#: Most audit entries one :meth:`AuditStore.audit` call returns.
MAX_AUDIT_PAGE = 1000

#: The default size cap of one attempt's log, in bytes (``App(job_log_cap=...)``).
DEFAULT_LOG_CAP = 256 * 1024
#: Most chunks one :meth:`JobLogStore.job_logs` call returns.
MAX_LOG_PAGE = 10_000


class JobStore(ABC):
    """The atomic job verbs: what producers, workers and schedulers call to move
    jobs through their lifecycle."""

    @abstractmethod
    def now(self) -> float:
        """The store's clock, in seconds since the epoch."""

    # -- producing ------------------------------------------------------

    @abstractmethod
    def enqueue(self, jobs: Sequence[NewJob]) -> list[EnqueueResult]:
        """Store ``jobs`` durably, all in one atomic step.

        A job whose ``unique_key`` matches a job that is pending or running,
        or that finished less than its ``unique_for`` seconds ago, is not
        stored; its result names the existing job with ``duplicate=True``.
        Two equal keys in one batch behave as if sent one after the other.
        A job runs at ``run_at`` if given, else at ``now() + delay``; a job
        whose run time is in the future is ``scheduled``, else ``queued``.
        """

    @abstractmethod
    def fire_schedule(
        self, name: str, expected_next: float, new_next: float | None, job: NewJob | None
    ) -> FireResult:
        """Atomically advance a schedule and enqueue its job.

        Applies only if the schedule is enabled and its ``next_fire`` still
        equals ``expected_next`` (else ``"conflict"``: another scheduler fired
        it, or it was paused meanwhile).
        Sets ``next_fire = new_next`` and ``last_fire = expected_next``. With
        ``job`` None the fire is ``"dropped"`` (misfire grace). With overlap
        ``"skip"`` and the last job still pending or running, or ``"queue"``
        and a job already waiting, no job is made: ``"skipped"``. Else the job
        is enqueued and becomes ``last_job_id``: ``"fired"``.
        """

    @abstractmethod
    def run_schedule(self, name: str, job: NewJob) -> EnqueueResult | None:
        """Enqueue ``job`` for schedule ``name`` outside its trigger (run now)
        and make it the schedule's ``last_job_id``, in one step, so that the
        overlap rule of its next fires sees it; ``next_fire`` and
        ``last_fire`` do not move, and the schedule's own overlap rule does
        not hold this job back (it is asked for). None, with nothing
        enqueued, if no schedule is named ``name``."""

    # -- consuming ------------------------------------------------------

    @abstractmethod
    def claim(
        self,
        worker_id: str,
        queues: Sequence[str],
        limit: int,
        host: HostScope = ANY_HOST,
    ) -> list[ClaimedJob]:
        """Lease up to ``limit`` runnable jobs from ``queues`` to ``worker_id``.

        Runnable: queued (or scheduled and due), queue not paused, every
        concurrency key below its limit, every rate key with a token, every
        breaker key closed (or half-open with no probe running), and sent to
        no host or to one ``host`` takes (see :class:`HostScope`: the worker's
        own, or one whose workers on the job's queue have been gone for the
        grace; a host is seen by the heartbeats of its workers). Higher
        priority first, FIFO within a priority, rotating fairly between
        fairness keys; the jobs are returned in that order, best first (a
        worker runs them so). Blocked jobs stay queued and are skipped, as are
        jobs of other hosts. Each claimed job becomes ``running`` with
        ``attempt + 1``, a fresh token and a lease of the job's ``lease``
        seconds.
        """

    @abstractmethod
    def extend(self, leases: Sequence[LeaseRef]) -> list[LeaseStatus]:
        """Renew each lease by its job's lease duration. Per lease: ``"held"``;
        ``"cancel"`` when the job was asked to stop (:meth:`SteeringStore.cancel`:
        the lease is renewed, and the worker should stop the job); ``"lost"``
        where the token no longer holds the job (the lease expired and the job
        moved on)."""

    @abstractmethod
    def finish(self, outcomes: Sequence[Outcome]) -> list[bool]:
        """Record attempt outcomes. An outcome whose token does not hold the
        job (stale claim) is refused: False, nothing changes.

        Success: ``succeeded`` with the result; the ``error`` and
        ``traceback`` of an earlier failed attempt (or snooze) stay, as
        :class:`~rota.models.Job` says. Failure with ``retry_in`` and
        attempts left: back to ``scheduled`` at ``now() + retry_in``.
        Otherwise ``failed``. A snooze (``snooze`` and ``retry_in``) is not
        an attempt: back to ``scheduled`` at ``now() + retry_in`` whatever
        the attempts left, ``attempt`` one less, ``error`` the outcome's,
        ``traceback`` None, no history entry, no count in the stats nor in a
        breaker. Limit slots are released either way.

        A job marked by :meth:`SteeringStore.cancel` ends ``cancelled``
        whatever the outcome.

        Every attempt that ends (here, in :meth:`release` and in :meth:`recover`)
        appends an entry to the job's ``history``: ``attempt``, ``event``
        (succeeded, failed, released, lost, cancelled), ``worker`` (the lease owner),
        ``host`` (from that worker's heartbeat record; None once it is gone),
        ``error`` for a failure, and ``at``.
        """

    @abstractmethod
    def release(self, leases: Sequence[LeaseRef]) -> list[bool]:
        """Give jobs back to the queue without counting the attempt (shutdown)."""

    @abstractmethod
    def recover(self) -> list[str]:
        """Handle expired leases; return the ids of the jobs recovered.

        Each such job records a lost attempt. Under its ``max_lost`` it goes
        back to ``queued``; at it, it ends ``failed`` with error
        ``worker_lost``. Its limit slots are released. Lost attempts do not
        use up ``max_attempts``: that budget counts failed attempts only.
        """

    @abstractmethod
    def wait(self, queues: Sequence[str], timeout: float) -> None:
        """Block up to ``timeout`` seconds or until work may be claimable on
        ``queues`` (a new job, a due delayed job, a released slot). May return
        early spuriously; never busy-waits."""

    @abstractmethod
    def interrupt_waits(self) -> None:
        """End the waits for work under way in this process (:meth:`wait`, a
        waiting claim) now, as a spurious wake-up would: a stopping worker
        does not sit out its last wait. A wait that begins after the call
        waits."""

    # -- workers --------------------------------------------------------

    @abstractmethod
    def heartbeat(self, worker: WorkerInfo) -> None:
        """Record a worker's liveness and load (``heartbeat_at`` is set to now)."""

    @abstractmethod
    def remove_worker(self, worker_id: str) -> None:
        """Forget a worker that stopped cleanly, and give back to their queues
        the jobs claimed for it by :meth:`WaitingClaims.claim_wait` that it
        never took."""


_progress: ContextVar[Callable[[int], object] | None] = ContextVar(
    "rota_steering_progress", default=None
)


@contextmanager
def steering_progress(callback: Callable[[int], object]) -> Iterator[None]:
    """While in this block, the bulk steering verbs of this thread or task
    (:meth:`SteeringStore.retry_failed`, :meth:`SteeringStore.purge_queue`)
    call ``callback(n)`` after each part of their work that is applied for
    good, ``n`` the jobs that part changed: a caller interrupted half-way
    knows what was done (``app.admin`` audits it)."""
    token = _progress.set(callback)
    try:
        yield
    finally:
        _progress.reset(token)


def report_progress(count: int) -> None:
    """Called by a store's bulk steering verb after each part it applied
    (committed), with how many jobs that part changed (see
    :func:`steering_progress`)."""
    callback = _progress.get()
    if callback is not None and count:
        callback(count)


class SteeringStore(ABC):
    """Operator actions on jobs, queues and flow-control keys (called through
    ``app.admin``).

    :meth:`retry_failed` and :meth:`purge_queue` may touch very many jobs; a
    store may apply them in parts (Redis: 1,000 jobs per part), each part for
    good, and reports each part to :func:`report_progress` (a store that
    applies them in one transaction reports once, after it commits)."""

    @abstractmethod
    def cancel(self, job_ids: Sequence[str], by: str | None = None) -> list[bool]:
        """Cancel jobs; True for each job cancelled or asked to stop.

        A scheduled or queued job becomes ``cancelled`` at once, with a
        history entry ``{"event": "cancelled", "by": by, "at": now}``, and
        frees its unique key. A running job is marked: :meth:`JobStore.extend` answers
        ``"cancel"`` for it from then on, and when its attempt ends (a
        :meth:`JobStore.finish` of any outcome, a :meth:`JobStore.release`,
        an expired lease) it becomes ``cancelled``, never retried, with a
        history entry (event ``cancelled``, ``by``, ``requested_at``).
        Finished jobs, jobs already cancelled or marked, and unknown jobs:
        False, nothing changes.
        """

    @abstractmethod
    def retry(self, job_ids: Sequence[str], by: str | None = None) -> list[bool]:
        """Queue failed or cancelled jobs again with fresh attempt counts; a
        job with a unique key takes it again. Each job's history gains an
        entry ``{"event": "requeued", "by": by, "at": now}``, its attempts
        counting from 1 again after it. Per job: True when queued; False,
        and the job left as it was, for a job in another state or one whose
        unique key another job holds now (as :meth:`JobStore.enqueue` would
        find it a duplicate)."""

    @abstractmethod
    def retry_failed(
        self, queue: str | None = None, task: str | None = None, by: str | None = None
    ) -> int:
        """Retry every failed job of a queue and/or task, as :meth:`retry`
        (jobs whose unique key another job holds stay failed); return how
        many were queued. The jobs are those failed when the call began: one
        that is sent or fails (again) while it runs is left failed, so each
        job is queued at most once and the count is of distinct jobs."""

    @abstractmethod
    def delete(self, job_ids: Sequence[str]) -> list[bool]:
        """Remove jobs that are not running. False for running or unknown jobs."""

    @abstractmethod
    def pause_queue(self, queue: str) -> None:
        """Stop claims from ``queue``; it keeps accepting jobs."""

    @abstractmethod
    def resume_queue(self, queue: str) -> None:
        """Undo :meth:`pause_queue`."""

    @abstractmethod
    def purge_queue(self, queue: str) -> int:
        """Delete every pending job of ``queue``; return how many. Jobs
        sent while it runs may be kept."""

    @abstractmethod
    def purge_finished(self, older_than: float, limit: int = 10_000) -> int:
        """Retention: delete up to ``limit`` jobs finished more than
        ``older_than`` seconds ago; return how many."""

    # -- queue modes ----------------------------------------------------

    @abstractmethod
    def set_queue_mode(self, queue: str, mode: str) -> None:
        """Put ``queue`` in ``mode`` (:data:`~rota.models.QUEUE_MODES`); a queue
        never seen before becomes known, as with :meth:`pause_queue`.

        ``running`` is :meth:`resume_queue` and ``paused`` is
        :meth:`pause_queue`. A ``debug`` queue is claimed from until one of its
        jobs fails an attempt (in :meth:`JobStore.finish`, whether a retry
        follows or not): in the same atomic step that records the failure, the
        queue becomes ``paused`` with that job as its ``debug_job``
        (:meth:`InspectionStore.queues`). Jobs already running may finish;
        their failures are recorded and the link stays with the first. A lost
        attempt (:meth:`JobStore.recover`: the lease expired) is not the
        task's failure and does not pause the queue, unless it ends the job
        ``failed`` (``worker_lost`` at its ``max_lost``). Setting ``running``
        or ``debug`` clears the link; ``paused`` keeps it. ``InvalidArgument``
        for another mode, changing nothing.
        """

    # -- flow control ---------------------------------------------------

    @abstractmethod
    def set_limit(self, key: str, concurrency: int | None) -> bool:
        """Override the concurrency limit of ``key`` at run time (None: clear).
        True; False, with nothing written, for a clear of a key the store
        does not know (one no job of it was claimed with, nor set)."""

    @abstractmethod
    def set_rate(self, key: str, rate: float | None) -> bool:
        """Override the rate of ``key`` (jobs a second, above 0) at run time,
        in place of the rate its jobs carry; their burst stays (None: clear).
        True; False, with nothing written, for a clear of a key the store
        does not know."""

    @abstractmethod
    def reset_breaker(self, key: str) -> bool:
        """Close the breaker of ``key``; False if it was not open."""


class ScheduleStore(ABC):
    """The stored schedules; each fire is :meth:`JobStore.fire_schedule`."""

    @abstractmethod
    def upsert_schedule(self, schedule: Schedule) -> None:
        """Create or update a schedule by name. An update keeps the stored
        ``next_fire``, ``last_fire`` and ``enabled`` unless the trigger changed."""

    @abstractmethod
    def schedules(self) -> list[Schedule]:
        """Every schedule, by name."""

    @abstractmethod
    def get_schedule(self, name: str) -> Schedule | None:
        """The schedule called ``name``, or None, looked up on its own (not by
        listing every schedule)."""

    @abstractmethod
    def remove_schedule(self, name: str) -> bool:
        """Delete a schedule; False if there was none."""

    @abstractmethod
    def set_schedule_enabled(self, name: str, enabled: bool) -> bool:
        """Pause or resume a schedule; False if there is none."""

    @abstractmethod
    def schedule_changed_since(self, version: int) -> int:
        """A counter that changes whenever schedules change; schedulers use it
        to wake up. Returns the current value."""


class InspectionStore(ABC):
    """Read-only inspection for the dashboard, the CLI and job handles."""

    @abstractmethod
    def get_job(self, job_id: str) -> Job | None:
        """One job with everything known about it, or None."""

    @abstractmethod
    def get_jobs(self, job_ids: Sequence[str]) -> list[Job | None]:
        """Many jobs in one round trip, in the order asked."""

    @abstractmethod
    def find_job_ids(self, prefix: str, limit: int = 2) -> list[str]:
        """Ids of jobs that start with ``prefix``, at most ``limit`` of them,
        sorted. A job whose id equals ``prefix`` is always among them; when
        more than ``limit`` match, which others come back is up to the store.
        ``InvalidArgument`` for an empty prefix or a limit outside 1..1000."""

    def resolve_job_id(self, id_or_prefix: str) -> str:
        """The full id of the one job whose id is ``id_or_prefix`` or starts
        with it (a prefix needs :data:`MIN_PREFIX` characters).

        ``JobNotFound`` when no job matches (a shorter string must be a whole
        id, and the error says so), ``AmbiguousJobId`` (listing some candidates) when several do.
        """
        if id_or_prefix and self.get_jobs([id_or_prefix])[0] is not None:
            return id_or_prefix  # a whole id: no search
        if len(id_or_prefix) < MIN_PREFIX:
            raise JobNotFound(
                id_or_prefix,
                f"no job has that id, and a prefix needs at least {MIN_PREFIX} characters",
            )
        found = self.find_job_ids(id_or_prefix, limit=_CANDIDATES + 1)
        if not found:
            raise JobNotFound(id_or_prefix)
        if len(found) > 1:
            raise AmbiguousJobId(id_or_prefix, found[:_CANDIDATES], len(found) > _CANDIDATES)
        return found[0]

    @abstractmethod
    def list_jobs(self, query: JobQuery, limit: int = 50, cursor: str | None = None) -> JobPage:
        """Jobs matching ``query``, newest first, keyset-paginated."""

    @abstractmethod
    def iter_results(
        self, queue: str | None = None, task: str | None = None, batch: int = 1000
    ) -> Iterator[Job]:
        """Every succeeded job of a queue and/or task, streamed in batches."""

    @abstractmethod
    def queues(self) -> list[QueueInfo]:
        """Every queue that has jobs or is paused, with counts by state."""

    @abstractmethod
    def throughput(self, since: float) -> list[MinuteStats]:
        """Per-minute counts of finished attempts since ``since`` (store clock)."""

    @abstractmethod
    def totals(self) -> list[MinuteStats]:
        """All-time counts per queue and task (``minute`` is 0)."""

    @abstractmethod
    def workers(self) -> list[WorkerInfo]:
        """Every known worker with its last heartbeat, newest first."""

    @abstractmethod
    def limits(self) -> list[LimitInfo]:
        """Every flow-control key the store knows, with its current state."""


class AuditStore(ABC):
    """The audit log of operator actions."""

    @abstractmethod
    def append_audit(self, entry: AuditEntry) -> None:
        """Record one operator action. An ``at`` of 0 is filled in with
        :meth:`JobStore.now`. ``InvalidArgument`` for an entry that is not well
        formed (see :func:`~rota.stores.base.check_audit_entry`); nothing is
        written then."""

    @abstractmethod
    def audit(
        self,
        limit: int = 100,
        cursor: str | None = None,
        actor: str | None = None,
        action: str | None = None,
    ) -> tuple[list[AuditEntry], str | None]:
        """Audit entries, newest first (by ``at``, then by insertion), at most
        ``limit`` (1 to :data:`MAX_AUDIT_PAGE`), only those of ``actor`` and
        ``action`` when given. Returns the page and the cursor of the next
        page (None after the last). ``InvalidArgument`` for a bad limit or a
        cursor this store did not give."""

    @abstractmethod
    def purge_audit(self, older_than: float) -> int:
        """Retention: delete the entries recorded more than ``older_than``
        seconds ago (store clock); return how many."""


class JobLogStore(ABC):
    """What running attempts wrote to their output, kept per job."""

    @abstractmethod
    def append_logs(self, chunks: Sequence[LogChunk], cap: int = DEFAULT_LOG_CAP) -> None:
        """Append what running attempts wrote, in order, in one batch. Each
        attempt keeps at most ``cap`` bytes of data: over it, its oldest
        chunks are dropped and one first chunk on the ``rota`` stream
        (:func:`~rota.stores.base.dropped_note`) says how many bytes went.
        Chunks of jobs that no longer exist are ignored. ``at`` 0 is filled
        in with :meth:`JobStore.now`.
        ``InvalidArgument`` (nothing written) for a malformed batch."""

    @abstractmethod
    def job_logs(
        self, job_id: str, attempt: int | None = None, after: int = 0, limit: int = MAX_LOG_PAGE
    ) -> list[LogChunk]:
        """The job's log chunks with ``seq`` above ``after`` (follow a log by
        passing the last seq seen), of one ``attempt`` or of all, by attempt
        then seq, at most ``limit``. A job without logs, or no such job: []."""


class UserStore(ABC):
    """Users of the dashboard and API, with their roles and tokens."""

    @abstractmethod
    def put_user(self, user: User) -> None:
        """Create ``user``, or replace the role and password hash of the user of
        that name (keeping its tokens and creation time). ``created_at`` 0 means
        now on the store's clock; ``user.tokens`` is ignored."""

    @abstractmethod
    def get_user(self, name: str) -> User | None:
        """The user called ``name`` with its token labels, or None."""

    @abstractmethod
    def users(self) -> list[User]:
        """Every user, by name."""

    @abstractmethod
    def delete_user(self, name: str) -> bool:
        """Remove a user and all its tokens; False if there was no such user."""

    @abstractmethod
    def put_token(self, name: str, label: str, token_hash: str) -> None:
        """Give user ``name`` the API token ``label`` whose secret hashes to
        ``token_hash`` (a 64-character SHA-256 hex digest), replacing a token of
        the same label. ``InvalidArgument`` (nothing written) if there is no
        such user."""

    @abstractmethod
    def delete_token(self, name: str, label: str) -> bool:
        """Revoke user ``name``'s token ``label``; False if it had none."""

    @abstractmethod
    def user_for_token_hash(self, token_hash: str) -> User | None:
        """The user holding the token whose secret hashes to ``token_hash``, or None."""


class WaitingClaims(ABC):
    """Optional capability: a claim that waits for work, and may have new jobs
    claimed for the waiting worker as they are sent. Stores without it are
    used through :func:`claim_or_wait` and :func:`stop_waiting`."""

    @abstractmethod
    def claim_wait(
        self,
        worker_id: str,
        queues: Sequence[str],
        limit: int,
        timeout: float,
        host: HostScope = ANY_HOST,
    ) -> list[ClaimedJob]:
        """:meth:`JobStore.claim`; when nothing is runnable, wait up to
        ``timeout`` seconds for work (as :meth:`JobStore.wait`) and claim it. May return no job
        before ``timeout`` (a spurious wake-up, or work another worker took).

        A store may keep the worker registered as idle between calls and
        claim new jobs for it as they arrive, so that the wake-up carries the
        claim; those jobs count against ``limit`` (the worker's free slots)
        and :meth:`JobStore.remove_worker` gives back any it did not take.
        """

    @abstractmethod
    def stop_waiting(self, worker_id: str) -> None:
        """End the idle registration :meth:`claim_wait` may keep for
        ``worker_id`` (a worker that stops claiming for a while) and give back
        the jobs claimed for it that it has not taken. Nothing to do for a
        store that keeps none."""


def claim_or_wait(
    store: JobStore,
    worker_id: str,
    queues: Sequence[str],
    limit: int,
    timeout: float,
    host: HostScope = ANY_HOST,
) -> list[ClaimedJob]:
    """Claim up to ``limit`` jobs for ``worker_id``, waiting up to ``timeout``
    seconds for work when nothing is runnable: :meth:`WaitingClaims.claim_wait`
    on a store that has it; else :meth:`JobStore.claim`, and when that finds
    nothing, :meth:`JobStore.wait` and one more claim. May return no job
    before ``timeout`` (a spurious wake-up, or work another worker took)."""
    if isinstance(store, WaitingClaims):
        return store.claim_wait(worker_id, queues, limit, timeout, host)
    jobs = store.claim(worker_id, queues, limit, host)
    if jobs or timeout <= 0:
        return jobs
    store.wait(queues, timeout)
    return store.claim(worker_id, queues, limit, host)


def stop_waiting(store: JobStore, worker_id: str) -> None:
    """:meth:`WaitingClaims.stop_waiting` on a store that has it; nothing to do
    on the others, which keep no idle registration."""
    if isinstance(store, WaitingClaims):
        store.stop_waiting(worker_id)
