"""The store protocol: the one interface every backend implements.

The store holds all state and makes every decision that must be atomic
across machines. Each verb is one atomic step on the backend (one SQL
transaction, one Lua script) that checks the state it expects and reports
whether it applied. Batch verbs take and return sequences in the same order.

Times are seconds since the epoch **on the store's clock** (:meth:`Store.now`);
callers pass durations (``lease``, ``delay``), never their own timestamps,
except for absolute run times the user asked for.

:class:`Store` is the composition of the roles in :mod:`rota.stores.roles`
(job verbs, steering, schedules, inspection, audit, job logs, users), each of
which a backend usually implements as one mixin. A claim that waits for work
is an optional capability (:class:`~rota.stores.roles.WaitingClaims`); callers
go through :func:`~rota.stores.roles.claim_or_wait`. This module keeps the
input checks the backends share, and re-exports the roles' names.
"""

from __future__ import annotations

import logging
from abc import abstractmethod
from collections.abc import Sequence

from rota.errors import InvalidArgument
from rota.models import LOG_STREAMS, QUEUE_MODES, AuditEntry, LogChunk
from rota.stores import _checks
from rota.stores.roles import (
    DEFAULT_LOG_CAP,
    MAX_AUDIT_PAGE,
    MAX_LOG_PAGE,
    MIN_PREFIX,
    AuditStore,
    FireResult,
    InspectionStore,
    JobLogStore,
    JobStore,
    LeaseStatus,
    ScheduleStore,
    SteeringStore,
    UserStore,
    WaitingClaims,
    claim_or_wait,
    report_progress,
    steering_progress,
    stop_waiting,
)

__all__ = [
    "DEFAULT_LOG_CAP",
    "MAX_AUDIT_PAGE",
    "MAX_LOG_PAGE",
    "MIN_PREFIX",
    "SERVICE_NOTICE",
    "STORE_CREATORS",
    "AuditStore",
    "FireResult",
    "InspectionStore",
    "JobLogStore",
    "JobStore",
    "LeaseStatus",
    "ScheduleStore",
    "SteeringStore",
    "Store",
    "UserStore",
    "WaitingClaims",
    "check_audit_entry",
    "check_audit_query",
    "check_log_chunks",
    "check_log_query",
    "check_mode",
    "check_prefix",
    "claim_or_wait",
    "dropped_bytes",
    "dropped_note",
    "is_service_notice",
    "report_progress",
    "steering_progress",
    "stop_waiting",
]

#: Set (``extra={SERVICE_NOTICE: True}``) on a log record meant for the logs of
#: long-running processes (worker, scheduler, dashboard), such as a warning about
#: the store server's setup: one-shot CLI commands leave it out, so it is not
#: repeated on every ``rota jobs list``.
SERVICE_NOTICE = "rota_service_notice"


#: What creates a store that does not exist yet, for the errors of commands
#: that only read or steer one. Not ``rota send --cmd`` without APP: it sends
#: to the default ./rota.db only if it exists.
STORE_CREATORS = "a worker, `rota run` or `rota send APP TASK` creates it"


def is_service_notice(record: logging.LogRecord) -> bool:
    """Whether ``record`` is a :data:`SERVICE_NOTICE`."""
    return bool(getattr(record, SERVICE_NOTICE, False))


def check_mode(queue: object, mode: object) -> None:
    """Refuse what :meth:`Store.set_queue_mode` cannot take: ``InvalidArgument``."""
    _checks.text(queue, "queue")
    if not isinstance(mode, str) or mode not in QUEUE_MODES:
        modes = ", ".join(QUEUE_MODES)
        raise InvalidArgument(f"queue mode must be one of {modes}, not {mode!r}")


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


class Store(
    JobStore,
    SteeringStore,
    ScheduleStore,
    InspectionStore,
    AuditStore,
    JobLogStore,
    UserStore,
):
    """Abstract base of every backend: every role of :mod:`rota.stores.roles`.
    See the module docstring for conventions."""

    #: Backend name shown to users ("sqlite", "redis", ...).
    kind: str = "abstract"

    @property
    def wake_latency(self) -> float:
        """The longest an idle worker may take to see work made claimable, in
        seconds, beyond a round trip: 0 for a store that tells waiting
        workers at once, the polling pace for one that does not."""
        return 0.0

    def replication_lag(self) -> float | None:
        """How many seconds this store, opened on a read replica, trails its
        primary (0: caught up); None when it cannot say: not a replica,
        replication stopped, no right to ask."""
        return None

    @abstractmethod
    def close(self) -> None:
        """Release connections. The store may not be used afterwards."""
