"""``rota scheduler APP`` and ``rota schedules ...``: fire schedules, list and steer them."""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

import click
from rich.console import Group
from rich.table import Table
from rich.text import Text

from rota import _json
from rota._validate import MAX_PRIORITY, MAX_RETRIES, MIN_PRIORITY
from rota._wording import attempt_text, call_text, options_retry_text, shown_options
from rota.cli._actor import cli_actor
from rota.cli._command_options import (
    CommandLineCommand,
    command_options,
    given_command_options,
    require_separator,
)
from rota.cli._support import (
    CliError,
    CliState,
    backoff_callback,
    console,
    fmt_when,
    name_callback,
    note,
    pass_state,
    positive_duration_callback,
    url_option,
)
from rota.cli.send import command_app, task_call
from rota.commands import (
    COMMAND_TASK,
    CommandSpec,
    command_call,
    command_line,
    command_options_of,
    shown_kwargs,
)
from rota.diagnose import is_overdue, overdue_schedules
from rota.errors import InvalidArgument, InvalidSchedule, NotFound
from rota.models import JobState, Schedule
from rota.scheduling import at, cron, every, trigger_from_json
from rota.scheduling.define import OVERLAP_POLICIES
from rota.scheduling.history import ScheduleRuns, run_time, schedule_runs, upcoming_fires
from rota.scheduling.triggers import time_zone
from rota.stores import Store, redact_url

if TYPE_CHECKING:
    from rota.app import App

__all__ = ["scheduler", "schedules"]

T = TypeVar("T")

LOG_LEVELS = ("debug", "info", "warning", "error")
#: Jobs ``rota schedules show`` lists.
SHOWN_RUNS = 10
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

_STATE_STYLES = {
    JobState.SCHEDULED: "cyan",
    JobState.QUEUED: "blue",
    JobState.RUNNING: "yellow",
    JobState.SUCCEEDED: "green",
    JobState.FAILED: "red",
    JobState.CANCELLED: "magenta",
}


# -- rota scheduler --------------------------------------------------------------


@click.command()
@click.argument("app_spec", metavar="[APP]", required=False)
@click.option(
    "--max-sleep",
    type=click.FloatRange(min=0.01, max=60),
    default=0.5,
    show_default=True,
    help="Longest pause, in seconds, before a new, paused or removed schedule is noticed.",
)
@click.option(
    "--log-level",
    type=click.Choice(LOG_LEVELS, case_sensitive=False),
    default="info",
    show_default=True,
    help="Log messages from this level up, on stderr (debug logs every fire).",
)
@url_option
@pass_state
def scheduler(cli: CliState, app_spec: str | None, max_sleep: float, log_level: str) -> None:
    """Fire APP's schedules until SIGTERM or Ctrl-C.

    Run as many as you like, on any machines that reach the store: each fire
    makes exactly one job. Loading APP runs its module, so schedules it
    defines with app.schedule(...) are created or updated first. Without
    APP it fires the schedules stored in --url (or ROTA_URL): those added
    with `rota schedules add`, the dashboard or another app; a store that
    does not exist there is refused rather than created.
    """
    from rota._signals import StopSignals
    from rota._store_wait import wait_for_store
    from rota.scheduling.scheduler import Scheduler

    logging.basicConfig(level=log_level.upper(), format=LOG_FORMAT, stream=sys.stderr)
    # without APP there is nothing to fire but stored schedules: a store that
    # does not exist (a mistyped URL) is refused, not created empty
    app = cli.load_app(app_spec, wait_for_store=True) if app_spec else cli.store_app()
    engine = Scheduler(app, max_sleep=max_sleep)
    stop = StopSignals()
    stop.install()
    if not wait_for_store(app, stop):
        click.echo("rota scheduler: stopped before the store answered")
        return
    count = len(app.store.schedules())
    click.echo(f"rota scheduler: store {redact_url(app.url)}, {count} schedule(s)")
    engine.run(stop)
    fired = engine.counts["fired"]
    click.echo(f"rota scheduler: stopped after firing {fired} job(s)")


# -- rota schedules ----------------------------------------------------------------


@click.group()
def schedules() -> None:
    """List, inspect and steer schedules."""


def _unknown(name: str) -> CliError:
    return CliError(f"no schedule named {name!r}; 'rota schedules list' shows them all")


def _steer(action: Callable[[], T], name: str) -> T:
    """Run an admin action on schedule ``name``; an unknown name says how to list them."""
    try:
        return action()
    except NotFound:
        raise _unknown(name) from None


def _find(store: Store, name: str) -> Schedule:
    found = store.get_schedule(name)
    if found is None:
        raise _unknown(name)
    return found


def describe(schedule: Schedule) -> str:
    """The schedule's trigger in words, or its stored form if it cannot be read."""
    try:
        return trigger_from_json(schedule.trigger).describe()
    except Exception:  # written by a newer rota, or by hand
        return json.dumps(schedule.trigger, sort_keys=True)


def _last_states(store: Store, found: Sequence[Schedule]) -> dict[str, JobState]:
    ids = [s.last_job_id for s in found if s.last_job_id]
    return {job.id: job.state for job in store.get_jobs(ids) if job is not None}


def _last_job(schedule: Schedule, states: dict[str, JobState]) -> Text:
    if schedule.last_job_id is None:
        return Text("-")
    state = states.get(schedule.last_job_id)
    if state is None:
        return Text("gone", style="dim")
    return Text(state.value, style=_STATE_STYLES[state])


def _last_job_line(schedule: Schedule, states: dict[str, JobState]) -> Text:
    if schedule.last_job_id is None:
        return Text("-")
    return Text.assemble(schedule.last_job_id, " (", _last_job(schedule, states), ")")


def _enabled(schedule: Schedule, now: float) -> Text:
    if schedule.next_fire is None:  # a one-off that has fired, or a trigger past its end
        return Text("done", style="dim")
    if is_overdue(schedule, now):
        return Text("overdue", style="bold red")
    return Text("yes") if schedule.enabled else Text("paused", style="bold yellow")


def schedules_table(found: Sequence[Schedule], states: dict[str, JobState], now: float) -> Table:
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
            fmt_when(s.last_fire, now),
            _last_job(s, states),
            _enabled(s, now),
            str(s.skipped),
        )
    return table


@schedules.command("list")
@url_option
@pass_state
def list_schedules(cli: CliState) -> None:
    """Every schedule with its trigger in words, next and last fire, and last job."""
    store = cli.store_app().store
    found = store.schedules()
    if not found:
        note("no schedules yet: define one with app.schedule(...)")
        return
    now = store.now()
    console().print(schedules_table(found, _last_states(store, found), now))
    for problem in overdue_schedules(found, now):
        note(f"warning: {problem.message}")


def _next_fire(s: Schedule, now: float, *, would: bool = False) -> str:
    """When it fires next: ``never``, ``paused`` (a resume fires what is due
    then; with ``would``, ``paused (would fire at ...)``), or the time."""
    if s.next_fire is None:
        return "never"
    if s.enabled:
        return fmt_when(s.next_fire, now)
    fires = would_fire(s, now, 1) if would else []
    return f"paused (would fire at {fmt_when(fires[0], now)})" if fires else "paused"


def schedule_details(schedule: Schedule, states: dict[str, JobState], now: float) -> Group:
    """Everything about one schedule, as ``rota schedules show`` prints it."""
    s = schedule
    grace = "none" if s.grace is None else f"{s.grace:g} s"
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
        ("last fire", fmt_when(s.last_fire, now)),
        ("last job", _last_job_line(s, states)),
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


def _next_fires(schedule: Schedule, now: float) -> Text:
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
            Text(job.state.value, style=_STATE_STYLES[job.state]),
            fmt_when(job.fire_time, now),
            fmt_when(job.started_at, now),
            took,
            attempt_text(job),
        )
    return table


def _runs_summary(runs: ScheduleRuns) -> str:
    text = f"{runs.succeeded} succeeded, {runs.failed} failed of the last {len(runs.jobs)}"
    if runs.median_run is not None and runs.longest_run is not None:
        text += f"; median run {runs.median_run:.3f} s, longest {runs.longest_run:.3f} s"
    return text


@schedules.command("show")
@click.argument("name", callback=name_callback("schedule name"))
@url_option
@pass_state
def show(cli: CliState, name: str) -> None:
    """Show everything about schedule NAME: trigger, policies, arguments, job
    options, its next fires and its latest jobs."""
    store = cli.store_app().store
    found = _find(store, name)
    now = store.now()
    runs = schedule_runs(store, name, limit=SHOWN_RUNS)
    console().print(
        Group(
            schedule_details(found, _last_states(store, [found]), now),
            Text("\nnext fires", style="bold underline"),
            _next_fires(found, now),
            Text("\nlatest jobs", style="bold underline"),
            *([Text(_runs_summary(runs))] if runs.jobs else []),
            runs_table(runs, now),
        )
    )


@schedules.command("pause")
@click.argument("name", callback=name_callback("schedule name"))
@url_option
@pass_state
def pause(cli: CliState, name: str) -> None:
    """Stop schedule NAME from firing until it is resumed."""
    _steer(lambda: cli.store_app().admin.pause_schedule(name, by=cli_actor()), name)
    click.echo(f"paused schedule {name}")


@schedules.command("resume")
@click.argument("name", callback=name_callback("schedule name"))
@url_option
@pass_state
def resume(cli: CliState, name: str) -> None:
    """Let schedule NAME fire again; fires missed while paused follow its misfire policy."""
    _steer(lambda: cli.store_app().admin.resume_schedule(name, by=cli_actor()), name)
    click.echo(f"resumed schedule {name}")


@schedules.command("remove")
@click.argument("name", callback=name_callback("schedule name"))
@url_option
@pass_state
def remove(cli: CliState, name: str) -> None:
    """Delete schedule NAME. Jobs it already sent stay; redefining it in code brings it back."""
    _steer(lambda: cli.store_app().admin.remove_schedule(name, by=cli_actor()), name)
    click.echo(f"removed schedule {name}")


@schedules.command("run-now")
@click.argument("name", callback=name_callback("schedule name"))
@url_option
@pass_state
def run_now(cli: CliState, name: str) -> None:
    """Send one job of schedule NAME now and print its id; its next fire does not move."""
    app = cli.store_app()
    start = app.store.now()
    job_id = _steer(lambda: app.admin.run_schedule_now(name, by=cli_actor()), name)
    click.echo(job_id)
    job = app.store.get_job(job_id)
    if job is not None and job.enqueued_at < start:  # it was there before: a duplicate
        note(
            f"duplicate of {job_id}: a job with the same unique key is pending, running "
            "or finished within its unique window; nothing new was enqueued"
        )


def _zone(ctx: click.Context, param: click.Parameter, value: str) -> str:
    """``--tz``: an IANA time zone this machine knows."""
    try:
        time_zone(value)
    except InvalidSchedule as exc:
        raise click.BadParameter(str(exc), ctx, param) from None
    return value


_ADD_USAGE = "rota schedules add NAME --cron EXPR|--every N|--at ISO [OPTIONS] -- CMD ARGS..."


class _AddCommand(CommandLineCommand):
    """``rota schedules add``: a command line after ``--``, unless ``--task``
    names a task of ``--app``."""

    usage = _ADD_USAGE

    def takes_command_line(self, args: list[str]) -> bool:
        return "--task" not in args and not any(a.startswith("--task=") for a in args)


@schedules.command("add", cls=_AddCommand)
@click.argument("name", callback=name_callback("schedule name"))
@click.argument("words", nargs=-1, metavar="-- CMD [ARGS]...")
@click.option("--cron", "cron_expr", metavar="EXPR", help="Fire on a cron expression.")
@click.option(
    "--tz",
    default="UTC",
    show_default=True,
    callback=_zone,
    help="The time zone of --cron.",
)
@click.option(
    "--every",
    "interval",
    metavar="SECONDS",
    callback=positive_duration_callback,
    help="Fire every N s: 30, 90s, 15m, 1d.",
)
@click.option("--at", "at_time", metavar="ISO", help="Fire once at this time (naive: UTC).")
@click.option(
    "--task",
    "task_name",
    metavar="TASK",
    help="Run TASK of --app instead of a command line; the words after -- are its "
    "arguments, each read as JSON when it parses, or the words a task of app.command "
    "appends to its command line (as for rota send).",
)
@click.option("--app", "app_spec", metavar="APP", help="The app that defines --task.")
@click.option(
    "--json",
    "json_call",
    metavar="JSON",
    help="With --task: all its arguments as JSON, '[1, 2]' or "
    '\'{"args": [1], "kwargs": {"x": 2}}\'.',
)
@click.option("--queue", "-q", callback=name_callback("queue"), help="Send its jobs here.")
@click.option(
    "--host",
    callback=name_callback("host"),
    help="Run its jobs on a worker of this host name (rota worker --host), or on any "
    "once that host is gone for the workers' --host-grace.",
)
@click.option(
    "--retries",
    type=click.IntRange(0, MAX_RETRIES),
    help="Run a failed job again up to N times, with exponential backoff.",
)
@click.option(
    "--backoff",
    metavar="BASE,MAX",
    callback=backoff_callback,
    help="Retry delays double from BASE up to MAX, each shortened at random by up to "
    "half, e.g. 30s,1h.  [default: 1s,5m, or the task's]",
)
@click.option(
    "--timeout",
    metavar="SECONDS",
    callback=positive_duration_callback,
    help="Stop the command (its whole process group) after this long: 90s, 15m.",
)
@click.option(
    "--overlap",
    type=click.Choice(OVERLAP_POLICIES),
    default="allow",
    show_default=True,
    help="When a fire comes while the last job is still pending or running: run it "
    "anyway, skip it, or queue it behind.",
)
@click.option("--priority", "-p", type=click.IntRange(MIN_PRIORITY, MAX_PRIORITY))
@command_options
@click.option(
    "--enabled/--paused",
    default=None,
    help="Store it firing, or paused.  [default: a new schedule fires; a replaced one "
    "stays as it was]",
)
@url_option
@pass_state
def add(
    cli: CliState,
    name: str,
    words: tuple[str, ...],
    cron_expr: str | None,
    tz: str,
    interval: float | None,
    at_time: str | None,
    task_name: str | None,
    app_spec: str | None,
    json_call: str | None,
    queue: str | None,
    host: str | None,
    retries: int | None,
    backoff: tuple[float, float] | None,
    timeout: float | None,
    overlap: str,
    priority: int | None,
    cwd: str | None,
    env: dict[str, str],
    ok_codes: list[int] | None,
    enabled: bool | None,
) -> None:
    """Store schedule NAME that runs the command line after -- (no shell) as a
    job of the built-in rota.cmd task, which only workers started with
    --commands (or of an App(commands=True)) run; or, with --app APP --task
    TASK, a job of that task with the arguments after -- (or --json). Adding
    a NAME that exists replaces it, keeping its paused state unless
    --enabled or --paused is given."""
    trigger = _trigger(cron_expr, tz, interval, at_time)
    if backoff is not None and retries is None:
        raise click.UsageError("--backoff goes with --retries")
    given_options = {
        "queue": queue,
        "host": host,
        "retries": retries,
        "backoff": backoff,
        "priority": priority,
    }
    options = {key: value for key, value in given_options.items() if value is not None} or None
    settings = given_command_options(cwd, env, ok_codes)
    if task_name is None:
        app, task, args, kwargs = _command_schedule(
            cli, words, app_spec, json_call, timeout, settings
        )
    elif timeout is not None:
        raise click.UsageError("--timeout stops a command; a task's own timeout applies")
    elif any(value is not None for value in settings.values()):
        raise click.UsageError("--cwd, --env and --ok-codes go with a command line, not --task")
    else:
        app, task, args, kwargs = _task_schedule(cli, task_name, words, app_spec, json_call)
    existed = app.store.get_schedule(name) is not None  # (for the message only)
    stored = app.admin.add_schedule(
        name,
        task,
        trigger,
        args=args,
        kwargs=kwargs,
        overlap=overlap,
        enabled=enabled,
        options=options,
        by=cli_actor(),
    )
    what = command_line(stored) or f"task {stored.task}{call_text(args, kwargs)}"
    verb = "replaced" if existed else "added"
    click.echo(f"{verb} schedule {stored.name}: {describe(stored)}: {what}")
    if at_time is not None and stored.next_fire is not None and stored.next_fire < app.store.now():
        note(f"{at_time} has passed: a scheduler runs it once, as soon as it sees it")


def _trigger(cron_expr: str | None, tz: str, interval: float | None, at_time: str | None) -> Any:
    """The one trigger ``--cron``, ``--every`` or ``--at`` gives."""
    given = [
        flag
        for flag, value in (("--cron", cron_expr), ("--every", interval), ("--at", at_time))
        if value is not None
    ]
    if len(given) != 1:
        raise click.UsageError("give exactly one trigger: --cron, --every or --at")
    if tz != "UTC" and cron_expr is None:
        raise click.UsageError("--tz goes with --cron")
    try:
        if cron_expr is not None:
            return cron(cron_expr, tz)
        if interval is not None:
            return every(interval)
        return at(_iso(at_time or ""))
    except (InvalidArgument, InvalidSchedule) as exc:
        raise click.BadParameter(str(exc), param_hint=f"'{given[0]}'") from None


#: An app, a task name of it, and the arguments of a schedule's jobs.
_Call = tuple["App", str, list[Any], dict[str, Any]]


def _command_schedule(
    cli: CliState,
    words: tuple[str, ...],
    app_spec: str | None,
    json_call: str | None,
    timeout: float | None,
    settings: dict[str, Any],
) -> _Call:
    """The store's app, ``rota.cmd`` and the call running the command line
    ``words`` with the command options ``settings``."""
    if app_spec is not None or json_call is not None:
        raise click.UsageError("--app and --json go with --task")
    if not words:
        raise click.UsageError("missing the command line after -- (or --app APP --task TASK)")
    # `rota schedules add s --every 5m echo x`: as `rota send --cmd echo x`, refused
    require_separator("without --task", _ADD_USAGE)
    args, kwargs = command_call(list(words), timeout, **settings)
    try:
        CommandSpec.build(*args, **kwargs)
    except InvalidArgument as exc:
        raise click.UsageError(str(exc)) from None
    return command_app(cli), COMMAND_TASK, args, kwargs


def _task_schedule(
    cli: CliState,
    task_name: str,
    words: tuple[str, ...],
    app_spec: str | None,
    json_call: str | None,
) -> _Call:
    """APP, its task ``task_name`` and the call of ``words`` (or ``--json``;
    see :func:`rota.cli.send.task_call`)."""
    if app_spec is None:
        raise click.UsageError("--task needs --app, the app that defines it")
    app = cli.load_app(app_spec)
    args, kwargs = task_call(app.tasks.get(task_name), words, json_call)
    return app, task_name, args, kwargs


def _iso(text: str) -> datetime:
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        raise click.BadParameter(f"{text!r} is not an ISO 8601 time", param_hint="'--at'") from None
