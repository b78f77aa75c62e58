"""How a job's attempts and retries read, the same in the dashboard and the CLI."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import Any

import orjson

from rota.errors import InvalidArgument
from rota.models import Job, JobState
from rota.retry import RetryPolicy
from rota.stores.base import Store

__all__ = [
    "attempt_text",
    "call_text",
    "lag_text",
    "options_retry_text",
    "read_policy",
    "retry_text",
    "shown_options",
    "snooze_reason",
    "still_running",
]


def call_text(args: Sequence[Any], kwargs: Mapping[str, Any], width: int | None = None) -> str:
    """``(1, "a", x=2)``: a call's arguments as JSON, cut to ``width``
    characters (the last one ``…``) when given."""
    parts = [orjson.dumps(a).decode() for a in args]
    parts += [f"{k}={orjson.dumps(v).decode()}" for k, v in kwargs.items()]
    text = "(" + ", ".join(parts) + ")"
    return text if width is None or len(text) <= width else text[: width - 1] + "…"


def attempt_text(job: Job) -> str:
    """``2/3`` (attempt 2 of at most 3), or ``2 (1 lost)`` once an attempt was
    lost: lost attempts do not use up ``max_attempts``, so ``2/1`` would mislead."""
    if job.lost:
        return f"{job.attempt} ({job.lost} lost)"
    return f"{job.attempt}/{job.max_attempts}"


def retry_text(job: Job) -> str:
    """How the job's failed attempts are retried: ``none``, or e.g. ``up to 4,
    backoff 2 s doubling to 60 s; only on OSError; never on TimeoutError``."""
    return _policy_text(job.max_attempts, job.retry)


def options_retry_text(options: Mapping[str, Any]) -> str:
    """:func:`retry_text` of the jobs sent with a schedule's job ``options``."""
    return _policy_text(int(options.get("max_attempts") or 1), options.get("retry"))


def _policy_text(max_attempts: int, stored: str | None) -> str:
    """:func:`retry_text` of jobs of ``max_attempts`` with the retry policy
    stored as ``stored``."""
    if max_attempts <= 1:
        return "none"
    policy = read_policy(stored)
    if policy is None:
        return f"up to {max_attempts - 1} (the stored policy cannot be read: {stored!r})"
    base, cap = policy.backoff
    text = f"up to {max_attempts - 1}, backoff {base:g} s doubling to {cap:g} s"
    if policy.retry_on is not None:
        text += f"; only on {_names(policy.retry_on)}"
    if policy.no_retry_on:
        text += f"; never on {_names(policy.no_retry_on)}"
    return text


def read_policy(stored: str | None) -> RetryPolicy | None:
    """The retry policy stored as ``stored``, or None for text this version
    cannot read (a newer one may have written it)."""
    try:
        return RetryPolicy.decode(stored)
    except InvalidArgument:
        return None


def shown_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """A schedule's job options as the dashboard, the API and the CLI show
    them: the retry policy as an object, every field spelled out (None when
    it cannot be read), rather than the text it is stored as."""
    policy = read_policy(options.get("retry"))
    return dict(options) | {"retry": None if policy is None else asdict(policy)}


def _names(kinds: tuple[str, ...]) -> str:
    """Exception classes by their own names (``builtins.OSError``: ``OSError``)."""
    return ", ".join(kind.rpartition(".")[2] for kind in kinds) or "no error"


def snooze_reason(job: Job) -> str | None:
    """Why the job last snoozed (:class:`~rota.errors.Snooze`), when its
    ``error`` says that rather than why an attempt failed. A snooze leaves
    its reason as the job's error and no history entry, so an error that is
    not the one of the job's last failed attempt is a snooze's. A failed job's
    error is always its last attempt's."""
    if not job.error or job.state is JobState.FAILED:
        return None
    failures = [h.get("error") for h in job.history if h.get("event") == "failed"]
    return None if failures and failures[-1] == job.error else job.error


def still_running(job: Job | None) -> str | None:
    """What happens to a job just cancelled that still runs, true of every
    execution mode (a thread cannot be stopped from outside: it ends at its
    next look at ``current_job().cancelled``); None when the cancel ended it."""
    if job is not None and job.state is JobState.RUNNING:
        return (
            "its worker stops it within about a second: a command or a job in "
            "processes mode is killed, an async task cancelled, and a thread task "
            "stops when it checks cancelled"
        )
    return None


def lag_text(store: Store) -> str:
    """How far the read replica ``store`` trails its primary, as a note to a
    replica's URL: `` (2.5 s behind)``, `` (caught up)``, or nothing when the
    store cannot say (see :meth:`~rota.stores.base.Store.replication_lag`)."""
    lag = store.replication_lag()
    if lag is None:
        return ""
    return " (caught up)" if lag < 0.5 else f" ({lag:.3g} s behind)"
