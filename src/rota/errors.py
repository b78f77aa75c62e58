"""Exceptions raised by rota. All derive from :class:`RotaError`."""

from __future__ import annotations

import difflib
from datetime import timedelta

__all__ = [
    "AmbiguousJobId",
    "CommitInDoubt",
    "Conflict",
    "CorruptJob",
    "Forbidden",
    "InvalidArgument",
    "InvalidSchedule",
    "JobCancelled",
    "JobFailed",
    "JobNotFound",
    "JobTimeout",
    "NotFound",
    "PayloadTooLarge",
    "ResultTimeout",
    "RotaError",
    "SerializationError",
    "Snooze",
    "StoreError",
    "StoreUnavailable",
    "UnknownTask",
    "ValueRefused",
]


class RotaError(Exception):
    """Base class of every error rota raises on purpose."""


class InvalidArgument(RotaError, ValueError):
    """A value given to rota (an option, a state, a queue name) is not valid."""


class SerializationError(RotaError, TypeError):
    """Arguments or a result could not be encoded as JSON. Nothing was enqueued."""


class PayloadTooLarge(RotaError, ValueError):
    """The encoded arguments exceed the app's payload cap. Nothing was enqueued.
    ``where`` names what was sent (``send_many item 3``, ``schedule 'nightly'``)."""

    def __init__(self, size: int, cap: int, where: str = "") -> None:
        prefix = f"{where}: " if where else ""
        super().__init__(f"{prefix}payload is {size} bytes, over the cap of {cap} bytes")
        self.size = size
        self.cap = cap
        self.where = where


class UnknownTask(RotaError, LookupError):
    """No task of that name is registered in the app. ``where`` names what
    asked for it (``schedule 'nightly'``)."""

    def __init__(self, name: str, known: list[str] | None = None, where: str = "") -> None:
        hint = f" (registered: {', '.join(sorted(known))})" if known else ""
        fix = f"register it with @app.task(name={name!r}) in the module the worker loads"
        close = difflib.get_close_matches(name, known or [], n=1)
        if close:
            fix = f"did you mean {close[0]!r}? Or {fix}"
        if name == "rota.cmd":
            fix = "command-line jobs are off here: start the worker with --commands"
            fix += " (or App(commands=True))"
        prefix = f"{where}: " if where else ""
        super().__init__(f"{prefix}unknown task {name!r}{hint}; {fix}")
        self.name = name
        self.known = known
        self.where = where


class InvalidSchedule(RotaError, ValueError):
    """A trigger or schedule definition is not valid (bad cron field, bad interval)."""


class JobNotFound(RotaError, LookupError):
    """No job has that id (it never existed or was removed by retention);
    ``reason``, when given, says more (an id prefix too short to look up)."""

    def __init__(self, job_id: str, reason: str = "") -> None:
        super().__init__(f"job {job_id!r} not found" + (f": {reason}" if reason else ""))
        self.job_id = job_id
        self.reason = reason


class AmbiguousJobId(InvalidArgument, LookupError):
    """A job id prefix matches more than one job; ``candidates`` lists some of them."""

    def __init__(self, prefix: str, candidates: list[str], more: bool) -> None:
        listed = ", ".join(candidates) + (", ..." if more else "")
        super().__init__(f"job id prefix {prefix!r} matches several jobs: {listed}")
        self.prefix = prefix
        self.candidates = candidates


class JobFailed(RotaError):
    """The job ended ``failed``; carries the remote error and traceback."""

    def __init__(self, job_id: str, error: str | None, traceback: str | None) -> None:
        message = f"job {job_id} failed: {error or 'unknown error'}"
        if traceback:
            message += f"\n\nRemote traceback:\n{traceback}"
        super().__init__(message)
        self.job_id = job_id
        self.error = error
        self.traceback = traceback


class JobCancelled(RotaError):
    """The job was cancelled before it could produce a result."""

    def __init__(self, job_id: str) -> None:
        super().__init__(f"job {job_id} was cancelled")
        self.job_id = job_id


class Snooze(RotaError):
    """Raised by a task: not now, run this job again in ``seconds`` (a number,
    a string like ``"5m"`` or a timedelta, as every duration rota takes).

    The attempt does not count: the job goes back to ``scheduled`` with the
    same attempt number and as many retries left as before, its ``error``
    saying why it waits (``Snooze: <reason>``), and no history entry. Use it
    for a job that waits on something outside it (a file not there yet, a
    host asking for a pause), not for a failure: a job that snoozes every
    time waits for ever. ``seconds`` must be above 0 (:class:`InvalidArgument`
    else): a job snoozed for no time would be claimed again at once, over and
    over.
    """

    def __init__(self, seconds: float | str | timedelta, reason: str = "") -> None:
        from rota._time import parse_duration  # here: rota._time imports this module

        self.seconds = float(parse_duration(seconds, what="snooze seconds", positive=True))
        self.reason = reason
        super().__init__(reason or f"snoozed for {self.seconds:g} s")


class JobTimeout(RotaError, TimeoutError):
    """A job ran longer than its task's ``timeout`` (the attempt fails with
    it; its caller's ``result()`` raises :class:`JobFailed`), or a wait took
    longer than allowed: for a result wait, the subclass :class:`ResultTimeout`."""


class ResultTimeout(JobTimeout):
    """``JobHandle.result(timeout=...)`` stopped waiting: the job had not
    finished when the caller's ``timeout`` ran out. The job itself is left as
    it is (still queued, scheduled or running) and may finish later.

    A builtin :class:`TimeoutError`, as a result wait raises elsewhere
    (Celery, :mod:`concurrent.futures`), and a :class:`JobTimeout`, which
    ``result()`` raised before it, so ``except JobTimeout`` still catches it.
    Catch it to tell "I stopped waiting" from a task that ran over its own
    ``timeout``, which ``result()`` reports as :class:`JobFailed` (error
    ``JobTimeout: ...``)."""

    def __init__(self, job_id: str, message: str) -> None:
        super().__init__(message)
        self.job_id = job_id


class StoreError(RotaError):
    """The store refused or failed an operation (disk full, database corrupt,
    a constraint it reports). Nothing the operation would have written was kept."""


class StoreUnavailable(StoreError, ConnectionError):
    """The store could not be reached, or could not serve the call for now
    (a conflict with concurrent transactions, a lock not granted in time, a
    cancelled statement, a server short of resources: the message says
    which); trying again later may succeed."""


class CommitInDoubt(StoreUnavailable):
    """The connection to the store (PostgreSQL, MySQL) was lost while it
    committed, and whether the commit happened is not known. An expected
    outcome of a server crash: a worker or scheduler tries again, and the
    store's checks (leases, tokens, fire times) keep a repeat from acting twice."""


class ValueRefused(StoreError, InvalidArgument):
    """The store's server refused a value it cannot keep (PostgreSQL: a NUL
    in a text; MySQL: a value too long for its column). Nothing was written."""


class CorruptJob(RotaError, ValueError):
    """A stored job's payload is not what rota wrote (bad UTF-8, bad JSON, or not
    ``{"args": [...], "kwargs": {...}}``). The job fails at once without a retry."""

    def __init__(self, job_id: str, reason: str) -> None:
        super().__init__(f"job {job_id} has a corrupt payload: {reason}")
        self.job_id = job_id
        self.reason = reason


class Forbidden(RotaError, PermissionError):
    """The caller's role does not allow the action (a viewer acting, an
    operator managing users). Nothing was changed."""


class NotFound(RotaError, LookupError):
    """A queue, schedule or limit key named in an operator action does not exist."""


class Conflict(RotaError):
    """An operator action does not apply to the object in its current state
    (retrying a running job, resetting a breaker that is closed)."""
