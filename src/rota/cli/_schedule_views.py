"""How ``rota schedules list`` and ``rota schedules show`` print schedules:
the list's table, one schedule's fields, its next fires and latest jobs."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

from rota import _json
from rota._wording import attempt_text, options_retry_text, shown_options
from rota.cli._support import fmt_when, summary
from rota.cli.jobs import state_text
from rota.commands import command_line, command_options_of, shown_kwargs
from rota.diagnose import is_overdue
from rota.models import Job, JobState, Schedule
from rota.scheduling import trigger_from_json
from rota.scheduling.history import ScheduleRuns, run_time, sent_no_job, upcoming_fires
from rota.stores import Store

__all__ = [
    "describe",
    "last_jobs",
    "next_fires",
    "runs_summary",
    "runs_table",
    "schedule_details",
    "schedules_table",
    "would_fire",
]


def describe(schedule: Schedule) -> str:
    """The schedule's trigger in words, or its stored form if it cannot be read."""
    try:
        return trigger_from_json(schedule.trigger).describe()
    except Exception:  # written by a newer rota, or by hand
        return json.dumps(schedule.trigger, sort_keys=True)


def last_jobs(store: Store, found: Sequence[Schedule]) -> dict[str, Job]:
    """The last job of each schedule of ``found`` still in the store, by id."""
    ids = [s.last_job_id for s in found if s.last_job_id]
    return {job.id: job for job in store.get_jobs(ids) if job is not None}


def _last_job(schedule: Schedule, jobs: dict[str, Job], *, error_width: int = 0) -> Text:
    """Its last job's state; with ``error_width``, and the first line of its
    error when it failed."""
    if schedule.last_job_id is None:
        return Text("-")
    job = jobs.get(schedule.last_job_id)
    if job is None:
        return Text("gone", style="dim")
    text = state_text(job.state)
    failure = _failure(schedule, jobs, error_width) if error_width else ""
    return text.append(f": {failure}") if failure else text


def _failure(schedule: Schedule, jobs: dict[str, Job], width: int) -> str:
    """The first line of the error of the schedule's last job, when it failed."""
    job = jobs.get(schedule.last_job_id or "")
    if job is None or job.state is not JobState.FAILED:
        return ""
    return summary(job.error, width)


def _last_job_line(schedule: Schedule, jobs: dict[str, Job], now: float) -> Text:
    if schedule.last_job_id is None:
        return Text("-")
    line = Text.assemble(schedule.last_job_id, " (", _last_job(schedule, jobs), ")")
    job = jobs.get(schedule.last_job_id)
    if job is not None and job.fire_time is not None:
        line.append(f", fire {fmt_when(job.fire_time, now)}")
    return line


def _sent_no_job(schedule: Schedule, jobs: dict[str, Job]) -> bool:
    """Its last fire sent no job (dropped or skipped): see :func:`sent_no_job`."""
    job = jobs.get(schedule.last_job_id) if schedule.last_job_id else None
    fired = None if job is None else job.fire_time
    return sent_no_job(schedule.last_fire, schedule.last_job_id, fired)


def _last_fire(schedule: Schedule, jobs: dict[str, Job], now: float, *, why: bool = False) -> Text:
    """When it last fired; for a fire that sent no job, says so (``why``: and
    the reasons it may have had)."""
    text = Text(fmt_when(schedule.last_fire, now))
    if _sent_no_job(schedule, jobs):
        reasons = ": dropped or skipped (the scheduler's log says why)" if why else ""
        text.append(f", no job sent{reasons}", style="yellow")
    return text


def _enabled(schedule: Schedule, now: float) -> Text:
    if schedule.next_fire is None:  # a one-off that has fired, or a trigger past its end
        return Text("done", style="dim")
    if is_overdue(schedule, now):
        return Text("overdue", style="bold red")
    return Text("yes") if schedule.enabled else Text("paused", style="bold yellow")


def schedules_table(found: Sequence[Schedule], jobs: dict[str, Job], now: float) -> Table:
    """One row per schedule: the columns of ``rota schedules list``."""
    table = Table(box=None, pad_edge=False, header_style="bold")
    table.add_column("name", no_wrap=True)
    table.add_column("task")
    table.add_column("trigger")
    table.add_column("next fire", no_wrap=True)
    table.add_column("last fire", no_wrap=True)
    table.add_column("last job")
    table.add_column("enabled")
    table.add_column("skipped", justify="right")
    for s in found:
        table.add_row(
            s.name,
            f"{s.task}: {command_line(s)}" if command_line(s) else s.task,
            describe(s),
            _next_fire(s, now),
            _last_fire(s, jobs, now),
            _last_job(s, jobs, error_width=40),
            _enabled(s, now),
            str(s.skipped),
        )
    return table


def _next_fire(s: Schedule, now: float, *, would: bool = False) -> str:
    """When it fires next: ``never``, ``paused`` (a resume fires what is due
    then; with ``would``, ``paused (would fire at ...)``), or the time."""
    if s.next_fire is None:
        return "never"
    if s.enabled:
        return fmt_when(s.next_fire, now)
    fires = would_fire(s, now, 1) if would else []
    return f"paused (would fire at {fmt_when(fires[0], now)})" if fires else "paused"


def schedule_details(schedule: Schedule, jobs: dict[str, Job], now: float) -> Group:
    """Everything about one schedule, as ``rota schedules show`` prints it."""
    s = schedule
    grace = "none" if s.grace is None else f"{s.grace:g} s"
    failure = _failure(s, jobs, 200)
    call: Any = _json.loads(s.payload)
    options = command_options_of(s.task, call.get("kwargs") if isinstance(call, dict) else None)
    if isinstance(call, dict) and "kwargs" in call:  # a command's env values: names only
        call = call | {"kwargs": shown_kwargs(s.task, call["kwargs"])}
    rows: list[tuple[str, str | Text]] = [
        ("name", s.name),
        ("task", s.task),
        *([("command", command_line(s))] if command_line(s) else []),
        *([("command options", options)] if options else []),
        ("trigger", describe(s)),
        ("enabled", _enabled(s, now)),
        ("next fire", _next_fire(s, now, would=True)),
        ("last fire", _last_fire(s, jobs, now, why=True)),
        ("last job", _last_job_line(s, jobs, now)),
        *([("last error", Text(failure, style="red"))] if failure else []),
        ("misfire", f"{s.misfire} (grace {grace})"),
        ("overlap", s.overlap),
        ("jitter", f"{s.jitter:g} s"),
        ("skipped", str(s.skipped)),
        ("retries", options_retry_text(s.job_options)),
    ]
    width = max(len(name) for name, _ in rows)
    fields = Text("\n").join(
        Text.assemble((name.ljust(width), "bold"), "  ", value) for name, value in rows
    )
    return Group(
        fields,
        Text("\narguments", style="bold underline"),
        json.dumps(call, indent=2, ensure_ascii=False),
        Text("\njob options", style="bold underline"),
        json.dumps(shown_options(s.job_options), indent=2, ensure_ascii=False),
    )


def would_fire(schedule: Schedule, now: float, count: int = 5) -> list[float]:
    """The next ``count`` fires of a paused schedule were it resumed: from its
    stored next fire, or from now if that has passed (a resume fires what is
    due then, by its misfire policy); [] when its trigger fires no more or
    cannot be read."""
    if schedule.next_fire is None:
        return []
    try:
        rule = trigger_from_json(schedule.trigger)
    except Exception:  # written by a newer rota, or by hand
        return []
    first = schedule.next_fire if schedule.next_fire >= now else rule.first_fire(now)
    return rule.fires_from(first, count)


def next_fires(schedule: Schedule, now: float) -> Text:
    fires = upcoming_fires(schedule.trigger, schedule.next_fire, schedule.enabled)
    if fires:
        return Text("\n".join(fmt_when(t, now) for t in fires))
    if schedule.next_fire is None:
        return Text("none: the trigger fires no more")
    would = would_fire(schedule, now)
    if not would:
        return Text("paused")
    return Text(
        "paused; once resumed it would fire at:\n" + "\n".join(fmt_when(t, now) for t in would)
    )


def runs_table(runs: ScheduleRuns, now: float) -> Table | Text:
    """A schedule's latest jobs, newest first: state, fire, start, time taken."""
    if not runs.jobs:
        return Text("no jobs yet")
    table = Table(box=None, pad_edge=False, header_style="bold")
    for column in ("id", "state", "fire", "started", "took", "attempt"):
        table.add_column(column, justify="right" if column in ("took", "attempt") else "left")
    for job in runs.jobs:
        ran = run_time(job, now)
        took = "-" if ran is None else f"{ran:.3f} s"
        if ran is not None and job.state is JobState.RUNNING:
            took += " so far"
        table.add_row(
            job.id,
            state_text(job.state),
            fmt_when(job.fire_time, now),
            fmt_when(job.started_at, now),
            took,
            attempt_text(job),
        )
    return table


def runs_summary(runs: ScheduleRuns) -> str:
    text = f"{runs.succeeded} succeeded, {runs.failed} failed of the last {len(runs.jobs)}"
    if runs.median_run is not None and runs.longest_run is not None:
        text += f"; median run {runs.median_run:.3f} s, longest {runs.longest_run:.3f} s"
    return text
