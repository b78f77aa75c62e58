"""Checks of what reaches a store's write verbs, run before anything is written.

The store is the last line: whatever calls the store protocol (the app, an
admin layer, an older client) must not be able to write a value the store
cannot later act on (a NaN lease, a priority past 64 bits, an empty queue
name). Each function raises :class:`~rota.errors.InvalidArgument` naming the
field (and the job) and returns nothing; a verb calls them on its whole
input before its first write. The bounds are the ones the Redis scripts
apply to their arguments too (``scripts.py`` binds these constants into the
Lua text), so both stores hold exactly the same values: Lua numbers are
doubles, and every bound here is well inside +-2**53.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from rota import _validate
from rota._validate import MAX_PRIORITY  # priorities fit a signed 32-bit integer
from rota.errors import InvalidArgument
from rota.models import (
    BreakerKey,
    ConcurrencyKey,
    HostScope,
    LeaseRef,
    NewJob,
    Outcome,
    RateKey,
    Schedule,
)
from rota.retry import RetryPolicy

#: max_attempts, max_lost, breaker failures: 1 to this.
MAX_COUNT = 1_000_000
#: Concurrency limits and rate bursts: up to this.
MAX_LIMIT = 2**31 - 1
#: Durations (delay, lease, timeout, unique_for, retry_in, cooldown, retention),
#: in seconds: at most this (over 300 years).
MAX_SECONDS = 1e10
#: Absolute times (run_at, fire_time, next_fire, created_at), in seconds since
#: the epoch: from this (0001-01-02 UTC) to :data:`MAX_TIME` (9999-12-31 UTC),
#: the times every time zone can show.
MIN_TIME = _validate.MIN_TIME
MAX_TIME = _validate.MAX_TIME
#: The lease a claim gives a job whose stored lease is not a duration in
#: ``(0, MAX_SECONDS]`` (a value written by something other than rota).
FALLBACK_LEASE = 30.0
#: Rate limits, in jobs per second: at most this.
MAX_RATE = 1e9
#: Jobs one claim may take, and jobs one purge may delete.
MAX_BATCH = 1_000_000


def _show(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _where(job_id: object) -> str:
    return f"job {_show(job_id)}: " if job_id is not None else ""


def text(value: object, field: str, job_id: object = None) -> None:
    """A non-empty string."""
    if not isinstance(value, str) or not value:
        raise InvalidArgument(
            f"{_where(job_id)}{field} must be a non-empty string, not {_show(value)}"
        )


def optional_text(value: object, field: str, job_id: object = None) -> None:
    """None or a non-empty string."""
    if value is not None:
        text(value, field, job_id)


def integer(value: object, field: str, low: int, high: int, job_id: object = None) -> None:
    """An int (not a bool) within ``[low, high]``."""
    if type(value) is not int or not low <= value <= high:
        raise InvalidArgument(
            f"{_where(job_id)}{field} must be an integer from {low} to {high}, not {_show(value)}"
        )


def number(
    value: object,
    field: str,
    low: float,
    high: float,
    *,
    above: bool = False,
    job_id: object = None,
) -> None:
    """A finite int or float within ``[low, high]`` (``(low, high]`` with ``above``)."""
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    if ok:
        x = float(value)  # type: ignore[arg-type]
        ok = math.isfinite(x) and (x > low if above else x >= low) and x <= high
    if not ok:
        left = "(" if above else "["
        raise InvalidArgument(
            f"{_where(job_id)}{field} must be a finite number in {left}{low:g}, {high:g}],"
            f" not {_show(value)}"
        )


def seconds(value: object, field: str, *, positive: bool = False, job_id: object = None) -> None:
    """A duration: finite, from 0 (above 0 with ``positive``) to :data:`MAX_SECONDS`."""
    number(value, field, 0.0, MAX_SECONDS, above=positive, job_id=job_id)


def moment(value: object, field: str, job_id: object = None) -> None:
    """An absolute time in seconds since the epoch, from :data:`MIN_TIME` to
    :data:`MAX_TIME`."""
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    if not ok or not MIN_TIME <= value <= MAX_TIME:  # type: ignore[operator]
        raise InvalidArgument(
            f"{_where(job_id)}{field} must be a time in seconds since the epoch from "
            f"{MIN_TIME:.0f} ({_validate.MIN_TIME_SHOWN}) to {MAX_TIME:.0f}"
            f" ({_validate.MAX_TIME_SHOWN}), not {_show(value)}"
        )


def blob(value: object, field: str, job_id: object = None) -> None:
    """Bytes."""
    if not isinstance(value, bytes):
        raise InvalidArgument(f"{_where(job_id)}{field} must be bytes, not {_show(value)}")


def flag(value: object, field: str) -> None:
    """A bool."""
    if not isinstance(value, bool):
        raise InvalidArgument(f"{field} must be True or False, not {_show(value)}")


def names(values: object, field: str) -> None:
    """A sequence (not a string) of non-empty strings."""
    if isinstance(values, str | bytes) or not isinstance(values, Sequence):
        raise InvalidArgument(f"{field} must be a list of strings, not {_show(values)}")
    for value in values:
        text(value, f"each of {field}")


def new_job(job: object) -> None:
    """Every field of a :class:`NewJob`."""
    if not isinstance(job, NewJob):
        raise InvalidArgument(f"a job must be a NewJob, not {_show(job)}")
    text(job.id, "id", job.id)
    jid = job.id
    text(job.task, "task", jid)
    text(job.queue, "queue", jid)
    blob(job.payload, "payload", jid)
    integer(job.priority, "priority", -MAX_PRIORITY, MAX_PRIORITY, jid)
    number(job.delay, "delay", -MAX_SECONDS, MAX_SECONDS, job_id=jid)
    if job.run_at is not None:
        moment(job.run_at, "run_at", jid)
    integer(job.max_attempts, "max_attempts", 1, MAX_COUNT, jid)
    integer(job.max_lost, "max_lost", 1, MAX_COUNT, jid)
    seconds(job.lease, "lease", positive=True, job_id=jid)
    if job.timeout is not None:
        seconds(job.timeout, "timeout", positive=True, job_id=jid)
    _limits(job)
    optional_text(job.unique_key, "unique_key", jid)
    if job.unique_for is not None:
        seconds(job.unique_for, "unique_for", job_id=jid)
    optional_text(job.schedule, "schedule", jid)
    if job.fire_time is not None:
        moment(job.fire_time, "fire_time", jid)
    optional_text(job.host, "host", jid)
    if job.retry is not None:
        text(job.retry, "retry", jid)
        try:
            RetryPolicy.decode(job.retry)
        except InvalidArgument as exc:
            raise InvalidArgument(f"{_where(jid)}{exc}") from None


def _limits(job: NewJob) -> None:
    jid = job.id
    for field, keys, kind in (
        ("concurrency", job.concurrency, ConcurrencyKey),
        ("rate", job.rate, RateKey),
        ("breaker", job.breaker, BreakerKey),
    ):
        if not isinstance(keys, tuple) or not all(isinstance(k, kind) for k in keys):
            raise InvalidArgument(
                f"{_where(jid)}{field} must be a tuple of {kind.__name__}, not {_show(keys)}"
            )
    for c in job.concurrency:
        text(c.key, "concurrency key", jid)
        integer(c.limit, f"concurrency limit of {c.key!r}", 0, MAX_LIMIT, jid)
    for r in job.rate:
        text(r.key, "rate key", jid)
        number(r.rate, f"rate of {r.key!r}", 0.0, MAX_RATE, above=True, job_id=jid)
        integer(r.burst, f"burst of {r.key!r}", 1, MAX_LIMIT, jid)
    for b in job.breaker:
        text(b.key, "breaker key", jid)
        integer(b.failures, f"breaker failures of {b.key!r}", 1, MAX_COUNT, jid)
        seconds(b.cooldown, f"breaker cooldown of {b.key!r}", job_id=jid)
        error_kinds(b.ignore, f"the kinds breaker {b.key!r} ignores", jid)


def error_kinds(value: object, field: str, job_id: object = None) -> None:
    """A tuple of non-empty strings naming exception classes."""
    if not isinstance(value, tuple) or not all(isinstance(k, str) and k for k in value):
        raise InvalidArgument(
            f"{_where(job_id)}{field} must be a tuple of non-empty strings, not {_show(value)}"
        )


def new_jobs(jobs: Sequence[object]) -> None:
    """Every job of an enqueue batch."""
    for job in jobs:
        new_job(job)


def claim(worker_id: object, queues: object, limit: object, host: object) -> None:
    """The arguments of :meth:`Store.claim`. A limit of 0 or less claims nothing
    and is allowed; anything else must be an int up to :data:`MAX_BATCH`."""
    text(worker_id, "worker id")
    names(queues, "queues")
    integer(limit, "claim limit", -MAX_BATCH, MAX_BATCH)
    if not isinstance(host, HostScope) or not isinstance(host.name, str):
        raise InvalidArgument(f"a claim's host must be a HostScope, not {_show(host)}")
    seconds(host.grace, "host grace")


def leases(refs: Sequence[object]) -> None:
    """:class:`LeaseRef` values with non-empty job ids and tokens."""
    for ref in refs:
        if not isinstance(ref, LeaseRef):
            raise InvalidArgument(f"a lease must be a LeaseRef, not {_show(ref)}")
        text(ref.job_id, "job id", ref.job_id)
        text(ref.token, "token", ref.job_id)


def outcomes(values: Sequence[object]) -> None:
    """:class:`Outcome` values: ids, tokens, types, a finite ``retry_in``, a
    ``snooze`` only on a failure with ``retry_in``, ``kinds`` only on a failure."""
    for o in values:
        if not isinstance(o, Outcome):
            raise InvalidArgument(f"an outcome must be an Outcome, not {_show(o)}")
        text(o.job_id, "job id", o.job_id)
        text(o.token, "token", o.job_id)
        if not isinstance(o.ok, bool):
            raise InvalidArgument(f"{_where(o.job_id)}ok must be True or False, not {o.ok!r}")
        if o.result is not None:
            blob(o.result, "result", o.job_id)
        for field, value in (("error", o.error), ("traceback", o.traceback)):
            if value is not None and not isinstance(value, str):
                raise InvalidArgument(
                    f"{_where(o.job_id)}{field} must be a string, not {_show(value)}"
                )
        if o.retry_in is not None:
            seconds(o.retry_in, "retry_in", job_id=o.job_id)
        if o.snooze is not False and (o.snooze is not True or o.ok or o.retry_in is None):
            raise InvalidArgument(
                f"{_where(o.job_id)}snooze must be False, or True on a failure with retry_in"
            )
        error_kinds(o.kinds, "kinds", o.job_id)
        if o.kinds and o.ok:
            raise InvalidArgument(f"{_where(o.job_id)}a success has no error kinds")


def page_cursor(value: str | None) -> int | None:
    """The position a :meth:`Store.list_jobs` cursor stands for (None: the first
    page); a cursor that is not a whole number from 0 to 2**53 is refused."""
    if value is None:
        return None
    try:
        position = int(value)
    except (TypeError, ValueError):
        raise InvalidArgument(f"bad cursor {value!r}") from None
    if not 0 <= position <= 2**53:
        raise InvalidArgument(f"bad cursor {value!r}: it must be a number from 0 to {2**53}")
    return position


def job_ids(values: object) -> None:
    """A sequence of non-empty job ids."""
    names(values, "job ids")


def concurrency_override(key: object, concurrency: object) -> None:
    """The arguments of :meth:`Store.set_limit`."""
    text(key, "limit key")
    if concurrency is not None:
        integer(concurrency, f"concurrency limit of {key!r}", 0, MAX_LIMIT)


def rate_override(key: object, rate: object) -> None:
    """The arguments of :meth:`Store.set_rate`."""
    text(key, "limit key")
    if rate is not None:
        number(rate, f"rate of {key!r}", 0.0, MAX_RATE, above=True)


def retention(older_than: object, limit: object) -> None:
    """The arguments of :meth:`Store.purge_finished`."""
    seconds(older_than, "retention age")
    integer(limit, "purge limit", 1, MAX_BATCH)


def schedule(value: object) -> None:
    """Every field of a :class:`Schedule` the store keeps."""
    if not isinstance(value, Schedule):
        raise InvalidArgument(f"a schedule must be a Schedule, not {_show(value)}")
    where = f"schedule {_show(value.name)}: "
    try:
        text(value.name, "name")
        text(value.task, "task")
        if not isinstance(value.trigger, Mapping) or not isinstance(value.job_options, Mapping):
            raise InvalidArgument("trigger and job_options must be dicts")
        blob(value.payload, "payload")
        if value.next_fire is not None:
            moment(value.next_fire, "next_fire")
        flag(value.enabled, "enabled")
        text(value.misfire, "misfire")
        text(value.overlap, "overlap")
        if value.grace is not None:
            seconds(value.grace, "grace")
        seconds(value.jitter, "jitter")
    except InvalidArgument as exc:
        raise InvalidArgument(where + str(exc)) from None


def fire(name: object, expected_next: object, new_next: object, job: object) -> None:
    """The arguments of :meth:`Store.fire_schedule`."""
    text(name, "schedule name")
    moment(expected_next, f"expected next fire of schedule {name!r}")
    if new_next is not None:
        moment(new_next, f"new next fire of schedule {name!r}")
    if job is not None:
        new_job(job)
