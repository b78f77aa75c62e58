"""What ``rota schedules add`` and ``rota schedules edit`` share: the trigger
options, the misfire policy, grace and jitter, and what a replace put back.

Values are handed to :mod:`rota.admin` as they were typed: it validates
them, with the wording the REST API and the dashboard give.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, TypeVar

import click

from rota._validate import MAX_PRIORITY, MAX_RETRIES, MIN_PRIORITY
from rota._wording import shown_options
from rota.cli._support import backoff_callback, name_callback, positive_duration_callback
from rota.errors import InvalidArgument, InvalidSchedule
from rota.models import Schedule
from rota.scheduling import at, cron, every
from rota.scheduling.define import OVERLAP_POLICIES
from rota.scheduling.triggers import time_zone

__all__ = [
    "NONE_WORDS",
    "job_flag_values",
    "job_flags",
    "policy_options",
    "policy_values",
    "reset_settings",
    "trigger_of",
    "trigger_options",
    "zone_callback",
]

F = TypeVar("F", bound=Callable[..., Any])

#: Words that, given to ``--grace``, mean no grace time.
NONE_WORDS = ("none", "")


def zone_callback(ctx: click.Context, param: click.Parameter, value: str) -> str:
    """``--tz``: an IANA time zone this machine knows."""
    try:
        time_zone(value)
    except InvalidSchedule as exc:
        raise click.BadParameter(str(exc), ctx, param) from None
    return value


def trigger_of(
    cron_expr: str | None,
    tz: str,
    interval: float | None,
    at_time: str | None,
    *,
    required: bool = True,
) -> Any:
    """The one trigger ``--cron``, ``--every`` or ``--at`` gives; None when
    none is given and none is ``required``."""
    given = [
        flag
        for flag, value in (("--cron", cron_expr), ("--every", interval), ("--at", at_time))
        if value is not None
    ]
    if tz != "UTC" and cron_expr is None:
        raise click.UsageError("--tz goes with --cron")
    if not given and not required:
        return None
    if len(given) != 1:
        raise click.UsageError("give exactly one trigger: --cron, --every or --at")
    try:
        if cron_expr is not None:
            return cron(cron_expr, tz)
        if interval is not None:
            return every(interval)
        return at(_iso(at_time or ""))
    except (InvalidArgument, InvalidSchedule) as exc:
        raise click.BadParameter(str(exc), param_hint=f"'{given[0]}'") from None


def _iso(text: str) -> datetime:
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        raise click.BadParameter(f"{text!r} is not an ISO 8601 time", param_hint="'--at'") from None


def _apply(f: F, options: list[Callable[[F], F]]) -> F:
    for option in reversed(options):
        f = option(f)
    return f


def trigger_options(f: F) -> F:
    """``--cron`` (with ``--tz``), ``--every`` and ``--at``."""
    return _apply(
        f,
        [
            click.option("--cron", "cron_expr", metavar="EXPR", help="Fire on a cron expression."),
            click.option(
                "--tz",
                default="UTC",
                show_default=True,
                callback=zone_callback,
                help="The time zone of --cron.",
            ),
            click.option(
                "--every",
                "interval",
                metavar="SECONDS",
                callback=positive_duration_callback,
                help="Fire every N s: 30, 90s, 15m, 1d.",
            ),
            click.option(
                "--at", "at_time", metavar="ISO", help="Fire once at this time (naive: UTC)."
            ),
        ],
    )


def job_flags(f: F) -> F:
    """``--queue``, ``--host``, ``--retries``, ``--backoff`` and ``--priority``:
    options of the schedule's jobs."""
    return _apply(
        f,
        [
            click.option(
                "--queue", "-q", callback=name_callback("queue"), help="Send its jobs here."
            ),
            click.option(
                "--host",
                callback=name_callback("host"),
                help="Run its jobs on a worker of this host name (rota worker --host), or on "
                "any once that host is gone for the workers' --host-grace.",
            ),
            click.option(
                "--retries",
                type=click.IntRange(0, MAX_RETRIES),
                help="Run a failed job again up to N times, with exponential backoff.",
            ),
            click.option(
                "--backoff",
                metavar="BASE,MAX",
                callback=backoff_callback,
                help="Retry delays double from BASE up to MAX, each shortened at random by "
                "up to half, e.g. 30s,1h.  [default: 1s,5m, or the task's]",
            ),
            click.option("--priority", "-p", type=click.IntRange(MIN_PRIORITY, MAX_PRIORITY)),
        ],
    )


def job_flag_values(
    queue: str | None,
    host: str | None,
    retries: int | None,
    backoff: tuple[float, float] | None,
    priority: int | None,
) -> dict[str, Any]:
    """The given ones of :func:`job_flags` as admin ``options``."""
    if backoff is not None and retries is None:
        raise click.UsageError("--backoff goes with --retries")
    given = {
        "queue": queue,
        "host": host,
        "retries": retries,
        "backoff": backoff,
        "priority": priority,
    }
    return {key: value for key, value in given.items() if value is not None}


def policy_options(f: F) -> F:
    """``--overlap``, ``--misfire``, ``--grace`` and ``--jitter``, as
    ``app.schedule`` takes them."""
    options: list[Callable[[F], F]] = [
        click.option(
            "--overlap",
            type=click.Choice(OVERLAP_POLICIES),
            help="When a fire comes while the last job is still pending or running: run it "
            "anyway, skip it, or queue it behind.  [default: allow]",
        ),
        click.option(
            "--misfire",
            metavar="coalesce|all",
            help="After downtime: one job for all the missed fires (coalesce), or one "
            "each (all).  [default: coalesce]",
        ),
        click.option(
            "--grace",
            metavar="SECONDS",
            help="Drop missed fires older than this: 30, 90s, 15m, 2h; 'none' keeps "
            "them all.  [default: none]",
        ),
        click.option(
            "--jitter",
            metavar="SECONDS",
            help="Start each fire's job up to this long after its fire time (a stable "
            "delay per fire): 30, 2m.  [default: 0]",
        ),
    ]
    return _apply(f, options)


def policy_values(
    overlap: str | None, misfire: str | None, grace: str | None, jitter: str | None
) -> dict[str, Any]:
    """The given ones of :func:`policy_options` as admin fields (``--grace
    none``: None, no grace time)."""
    values: dict[str, Any] = {}
    if overlap is not None:
        values["overlap"] = overlap
    if misfire is not None:
        values["misfire"] = misfire
    if grace is not None:
        values["grace"] = None if grace.strip().lower() in NONE_WORDS else grace
    if jitter is not None:
        values["jitter"] = jitter
    return values


def _seconds(value: float | None) -> str:
    return "none" if value is None else f"{value:g} s"


#: A schedule's own settings a replace may reset, each with how it reads.
_SETTINGS: dict[str, Callable[[Any], str]] = {
    "misfire": str,
    "grace": _seconds,
    "jitter": _seconds,
    "overlap": str,
}


def reset_settings(old: Schedule, new: Schedule, given: Mapping[str, bool]) -> list[str]:
    """What replacing ``old`` by ``new`` changed that the command line did
    not ask for (``given``: setting or job option name to whether it was
    given): ``grace none (was 2 s)``, ``queue default (was 'crawl')``, ..."""
    changed = []
    for name, shown in _SETTINGS.items():
        before, after = getattr(old, name), getattr(new, name)
        if not given.get(name) and before != after:
            changed.append(f"{name} {shown(after)} (was {shown(before)})")
    old_options, new_options = shown_options(old.job_options), shown_options(new.job_options)
    for name in sorted(old_options.keys() | new_options.keys()):
        before, after = old_options.get(name), new_options.get(name)
        if given.get(name) or before == after:
            continue
        if name == "max_attempts":  # as --retries sets it
            changed.append(f"retries {_retries(after)} (was {_retries(before)})")
        else:
            changed.append(f"{name} {after!r} (was {before!r})")
    return changed


def _retries(max_attempts: Any) -> str:
    return str(max(0, int(max_attempts or 1) - 1))
