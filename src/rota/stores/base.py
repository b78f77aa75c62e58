"""The store protocol: the one interface every backend implements.

The store holds all state and makes every decision that must be atomic
across machines. Each verb is one atomic step on the backend (one SQL
transaction, one Lua script) that checks the state it expects and reports
whether it applied. Batch verbs take and return sequences in the same order.

Times are seconds since the epoch **on the store's clock** (:meth:`Store.now`);
callers pass durations (``lease``, ``delay``), never their own timestamps,
except for absolute run times the user asked for.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from typing import Literal

from rota.errors import AmbiguousJobId, InvalidArgument, JobNotFound
from rota.models import (
    LOG_STREAMS,
    QUEUE_MODES,
    AuditEntry,
    ClaimedJob,
    EnqueueResult,
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
from rota.stores import _checks

FireResult = Literal["fired", "skipped", "dropped", "conflict"]
#: What :meth:`Store.extend` found for a lease.
LeaseStatus = Literal["held", "lost", "cancel"]

#: The fewest characters of a job id accepted as a prefix of it.
MIN_PREFIX = 6
_CANDIDATES = 5  # ids an ambiguous prefix error lists


def check_mode(queue: object, mode: object) -> None:
    """Refuse what :meth:`Store.set_queue_mode` cannot take: ``InvalidArgument``."""
    _checks.text(queue, "queue")
    if not isinstance(mode, str) or mode not in QUEUE_MODES:
        modes = ", ".join(QUEUE_MODES)
        raise InvalidArgument(f"queue mode must be one of {modes}, not {mode!r}")


#: Most audit entries one :meth:`Store.audit` call returns.
MAX_AUDIT_PAGE = 1000


def check_audit_entry(entry: object) -> AuditEntry:
    """``entry`` if :meth:`Store.append_audit` can store it, else ``InvalidArgument``
    (``SerializationError`` for details that are not JSON)."""
    from rota import _validate

    if not isinstance(entry, AuditEntry):
        raise InvalidArgument(f"an audit entry must be an AuditEntry, not {type(entry).__name__}")
    at = entry.at
    if not isinstance(at, int | float) or isinstance(at, bool) or not 0 <= at < float("inf"):
        raise InvalidArgument(f"audit time must be a finite, non-negative number, not {at!r}")
    for value, what in ((entry.actor, "actor"), (entry.role, "role"), (entry.origin, "origin")):
        _validate.name(value, f"audit {what}")
    _validate.name(entry.action, "audit action")
    if entry.address is not None:
        _validate.name(entry.address, "audit address")
    if not isinstance(entry.target, str) or len(entry.target) > 1000:
        raise InvalidArgument("audit target must be a string of at most 1000 characters")
    if not isinstance(entry.details, dict):
        raise InvalidArgument(f"audit details must be a dict, not {type(entry.details).__name__}")
    _validate.check_json(entry.details, what="audit details", root="details")
    return entry


def check_audit_query(
    limit: object, cursor: object, actor: object, action: object
) -> tuple[float, str] | None:
    """Refuse what :meth:`Store.audit` cannot take (``InvalidArgument``); return
    the cursor as ``(at, tiebreak)``: a page starts after it (the tiebreak is a
    string of digits, the entry's sequence number)."""
    from rota import _validate

    _validate.integer(limit, "limit", 1, MAX_AUDIT_PAGE)
    for value, what in ((actor, "actor"), (action, "action")):
        if value is not None:
            _validate.name(value, what)
    if cursor is None:
        return None
    at, _, tiebreak = cursor.partition(":") if isinstance(cursor, str) else ("", "", "")
    try:
        when = float(at)
    except ValueError:
        when = float("nan")
    if not tiebreak.isdigit() or when - when != 0.0 or len(tiebreak) > 100:
        raise InvalidArgument(f"audit cursor {str(cursor)[:40]!r} is not one this store gave")
    return when, tiebreak


def check_prefix(prefix: object, limit: object) -> None:
    """Refuse what :meth:`Store.find_job_ids` cannot take: ``InvalidArgument``."""
    if not isinstance(prefix, str) or not prefix:
        raise InvalidArgument(f"job id prefix must be a non-empty string, not {prefix!r}")
    if not prefix.isprintable() or len(prefix) > 200:
        raise InvalidArgument(f"job id prefix {prefix[:40]!r} is not a job id")
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= 1000:
        raise InvalidArgument(f"limit must be an integer between 1 and 1000, not {limit!r}")


#: The default size cap of one attempt's log, in bytes (``App(job_log_cap=...)``).
DEFAULT_LOG_CAP = 256 * 1024
#: Most chunks one :meth:`Store.job_logs` call returns.
MAX_LOG_PAGE = 10_000


def check_log_chunks(chunks: Sequence[object], cap: object) -> None:
    """Refuse what :meth:`Store.append_logs` cannot take: ``InvalidArgument``."""
    _checks.integer(cap, "log cap", 1, 2**31 - 1)
    if not isinstance(chunks, Sequence) or isinstance(chunks, str | bytes):
        raise InvalidArgument(f"log chunks must be a sequence, not {type(chunks).__name__}")
    for chunk in chunks:
        if not isinstance(chunk, LogChunk):
            raise InvalidArgument(f"a log chunk must be a LogChunk, not {type(chunk).__name__}")
        _checks.text(chunk.job_id, "job id")
        _checks.integer(chunk.attempt, "attempt", 0, 2**31 - 1, chunk.job_id)
        if chunk.stream not in LOG_STREAMS:
            streams = ", ".join(LOG_STREAMS)
            raise InvalidArgument(f"log stream must be one of {streams}, not {chunk.stream!r}")
        if not isinstance(chunk.data, str):
            raise InvalidArgument(f"log data must be text, not {type(chunk.data).__name__}")
        _checks.number(chunk.at, "log time", 0, _checks.MAX_TIME, job_id=chunk.job_id)


def check_log_query(job_id: object, attempt: object, after: object, limit: object) -> None:
    """Refuse what :meth:`Store.job_logs` cannot take: ``InvalidArgument``."""
    _checks.text(job_id, "job id")
    if attempt is not None:
        _checks.integer(attempt, "attempt", 0, 2**31 - 1, job_id)
    _checks.integer(after, "after", 0, 2**63 - 1, job_id)
    _checks.integer(limit, "log page size", 1, MAX_LOG_PAGE, job_id)


def dropped_note(nbytes: int) -> str:
    """The line that stands for the ``nbytes`` oldest bytes dropped over the cap."""
    return f"[... {nbytes} bytes dropped ...]\n"


def dropped_bytes(note: str) -> int:
    """The byte count a :func:`dropped_note` names (0 for other text)."""
    parts = note.split()
    return int(parts[1]) if len(parts) == 5 and parts[1].isdigit() else 0


class Store(ABC):
    """Abstract base of every backend. See the module docstring for conventions."""

    #: Backend name shown to users ("sqlite", "redis", ...).
    kind: str = "abstract"

    # -- lifecycle ---------------------------------------------------------

    @abstractmethod
    def close(self) -> None:
        """Release connections. The store may not be used afterwards."""

    @abstractmethod
    def now(self) -> float:
        """The store's clock, in seconds since the epoch."""

    # -- producing ---------------------------------------------------------

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

    # -- consuming ---------------------------------------------------------

    @abstractmethod
    def claim(self, worker_id: str, queues: Sequence[str], limit: int) -> list[ClaimedJob]:
        """Lease up to ``limit`` runnable jobs from ``queues`` to ``worker_id``.

        Runnable: queued (or scheduled and due), queue not paused, every
        concurrency key below its limit, every rate key with a token, every
        breaker key closed (or half-open with no probe running). Higher
        priority first, FIFO within a priority, rotating fairly between
        fairness keys. Blocked jobs stay queued and are skipped. Each claimed
        job becomes ``running`` with ``attempt + 1``, a fresh token and a lease
        of the job's ``lease`` seconds.
        """

    @abstractmethod
    def extend(self, leases: Sequence[LeaseRef]) -> list[LeaseStatus]:
        """Renew each lease by its job's lease duration. Per lease: ``"held"``;
        ``"cancel"`` when the job was asked to stop (:meth:`cancel`: the lease
        is renewed, and the worker should stop the job); ``"lost"`` where the
        token no longer holds the job (the lease expired and the job moved on)."""

    @abstractmethod
    def finish(self, outcomes: Sequence[Outcome]) -> list[bool]:
        """Record attempt outcomes. An outcome whose token does not hold the
        job (stale claim) is refused: False, nothing changes.

        Success: ``succeeded`` with the result. Failure with ``retry_in`` and
        attempts left: back to ``scheduled`` at ``now() + retry_in``.
        Otherwise ``failed``. Limit slots are released either way.

        A job marked by :meth:`cancel` ends ``cancelled`` whatever the outcome.

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

    def claim_wait(
        self, worker_id: str, queues: Sequence[str], limit: int, timeout: float
    ) -> list[ClaimedJob]:
        """:meth:`claim`; when nothing is runnable, wait up to ``timeout``
        seconds for work (as :meth:`wait`) and claim it. May return no job
        before ``timeout`` (a spurious wake-up, or work another worker took).

        A store may keep the worker registered as idle between calls and
        claim new jobs for it as they arrive, so that the wake-up carries the
        claim; those jobs count against ``limit`` (the worker's free slots)
        and :meth:`remove_worker` gives back any it did not take.
        """
        jobs = self.claim(worker_id, queues, limit)
        if jobs or timeout <= 0:
            return jobs
        self.wait(queues, timeout)
        return self.claim(worker_id, queues, limit)

    def stop_waiting(self, worker_id: str) -> None:
        """End the idle registration :meth:`claim_wait` may keep for
        ``worker_id`` (a worker that stops claiming for a while) and give back
        the jobs claimed for it that it has not taken. Nothing to do for a
        store that keeps none."""
        return None

    # -- steering ----------------------------------------------------------

    @abstractmethod
    def cancel(self, job_ids: Sequence[str], by: str | None = None) -> list[bool]:
        """Cancel jobs; True for each job cancelled or asked to stop.

        A scheduled or queued job becomes ``cancelled`` at once and frees its
        unique key. A running job is marked: :meth:`extend` answers
        ``"cancel"`` for it from then on, and when its attempt ends (a
        :meth:`finish` of any outcome, a :meth:`release`, an expired lease)
        it becomes ``cancelled``, never retried, with a history entry
        (event ``cancelled``, ``by``, ``requested_at``). Finished jobs, jobs
        already cancelled or marked, and unknown jobs: False, nothing changes.
        """

    @abstractmethod
    def retry(self, job_ids: Sequence[str]) -> list[bool]:
        """Queue failed or cancelled jobs again with fresh attempt counts."""

    @abstractmethod
    def retry_failed(self, queue: str | None = None, task: str | None = None) -> int:
        """Retry every failed job of a queue and/or task; return how many."""

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
        """Delete every pending job of ``queue``; return how many."""

    @abstractmethod
    def purge_finished(self, older_than: float, limit: int = 10_000) -> int:
        """Retention: delete up to ``limit`` jobs finished more than
        ``older_than`` seconds ago; return how many."""

    # -- queue modes -------------------------------------------------------

    @abstractmethod
    def set_queue_mode(self, queue: str, mode: str) -> None:
        """Put ``queue`` in ``mode`` (:data:`~rota.models.QUEUE_MODES`); a queue
        never seen before becomes known, as with :meth:`pause_queue`.

        ``running`` is :meth:`resume_queue` and ``paused`` is
        :meth:`pause_queue`. A ``debug`` queue is claimed from until one of its
        jobs fails an attempt (in :meth:`finish`, whether a retry follows or
        not): in the same atomic step that records the failure, the queue
        becomes ``paused`` with that job as its ``debug_job``
        (:meth:`queues`). Jobs already running may finish; their failures are
        recorded and the link stays with the first. A lost attempt
        (:meth:`recover`: the lease expired) is not the task's failure and does
        not pause the queue, unless it ends the job ``failed`` (``worker_lost``
        at its ``max_lost``). Setting ``running`` or ``debug`` clears the link;
        ``paused`` keeps it. ``InvalidArgument`` for another mode, changing
        nothing.
        """

    # -- workers -----------------------------------------------------------

    @abstractmethod
    def heartbeat(self, worker: WorkerInfo) -> None:
        """Record a worker's liveness and load (``heartbeat_at`` is set to now)."""

    @abstractmethod
    def remove_worker(self, worker_id: str) -> None:
        """Forget a worker that stopped cleanly, and give back to their queues
        the jobs claimed for it by :meth:`claim_wait` that it never took."""

    @abstractmethod
    def workers(self) -> list[WorkerInfo]:
        """Every known worker with its last heartbeat, newest first."""

    # -- flow control ------------------------------------------------------

    @abstractmethod
    def set_limit(self, key: str, concurrency: int | None) -> None:
        """Override the concurrency limit of ``key`` at run time (None: clear)."""

    @abstractmethod
    def reset_breaker(self, key: str) -> bool:
        """Close the breaker of ``key``; False if it was not open."""

    @abstractmethod
    def limits(self) -> list[LimitInfo]:
        """Every flow-control key the store knows, with its current state."""

    # -- schedules ---------------------------------------------------------

    @abstractmethod
    def upsert_schedule(self, schedule: Schedule) -> None:
        """Create or update a schedule by name. An update keeps the stored
        ``next_fire``, ``last_fire`` and ``enabled`` unless the trigger changed."""

    @abstractmethod
    def schedules(self) -> list[Schedule]:
        """Every schedule, by name."""

    @abstractmethod
    def remove_schedule(self, name: str) -> bool:
        """Delete a schedule; False if there was none."""

    @abstractmethod
    def set_schedule_enabled(self, name: str, enabled: bool) -> bool:
        """Pause or resume a schedule; False if there is none."""

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
    def schedule_changed_since(self, version: int) -> int:
        """A counter that changes whenever schedules change; schedulers use it
        to wake up. Returns the current value."""

    # -- inspection --------------------------------------------------------

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
        id), ``AmbiguousJobId`` (listing some candidates) when several do.
        """
        if id_or_prefix and self.get_jobs([id_or_prefix])[0] is not None:
            return id_or_prefix  # a whole id: no search
        if len(id_or_prefix) < MIN_PREFIX:
            raise JobNotFound(id_or_prefix)
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

    # -- audit log ---------------------------------------------------------

    @abstractmethod
    def append_audit(self, entry: AuditEntry) -> None:
        """Record one operator action. An ``at`` of 0 is filled in with
        :meth:`now`. ``InvalidArgument`` for an entry that is not well formed
        (see :func:`check_audit_entry`); nothing is written then."""

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

    # -- job logs ----------------------------------------------------------

    @abstractmethod
    def append_logs(self, chunks: Sequence[LogChunk], cap: int = DEFAULT_LOG_CAP) -> None:
        """Append what running attempts wrote, in order, in one batch. Each
        attempt keeps at most ``cap`` bytes of data: over it, its oldest
        chunks are dropped and one first chunk on the ``rota`` stream
        (:func:`dropped_note`) says how many bytes went. Chunks of jobs that
        no longer exist are ignored. ``at`` 0 is filled in with :meth:`now`.
        ``InvalidArgument`` (nothing written) for a malformed batch."""

    @abstractmethod
    def job_logs(
        self, job_id: str, attempt: int | None = None, after: int = 0, limit: int = MAX_LOG_PAGE
    ) -> list[LogChunk]:
        """The job's log chunks with ``seq`` above ``after`` (follow a log by
        passing the last seq seen), of one ``attempt`` or of all, by attempt
        then seq, at most ``limit``. A job without logs, or no such job: []."""

    # -- users -------------------------------------------------------------

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
