"""``rota scheduler APP`` and ``rota schedules ...``: fire schedules, list and steer them."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click
from rich.console import Group
from rich.text import Text

from rota._wording import call_text
from rota.cli._actor import cli_actor
from rota.cli._command_options import (
    CommandLineCommand,
    command_options,
    given_command_options,
    require_separator,
)
from rota.cli._schedule_options import (
    job_flag_values,
    job_flags,
    policy_options,
    policy_values,
    reset_settings,
    trigger_of,
    trigger_options,
)
from rota.cli._schedule_views import (
    describe,
    last_jobs,
    next_fires,
    runs_summary,
    runs_table,
    schedule_details,
    schedules_table,
)
from rota.cli._support import (
    CliError,
    CliState,
    console,
    name_callback,
    note,
    pass_state,
    positive_duration_callback,
    read_url_option,
    url_option,
)
from rota.cli.send import command_app, task_call
from rota.commands import (
    COMMAND_TASK,
    CommandSpec,
    command_call,
    command_line,
)
from rota.diagnose import overdue_schedules
from rota.errors import InvalidArgument, NotFound
from rota.models import Schedule
from rota.scheduling.history import schedule_runs
from rota.stores import Store, redact_url

if TYPE_CHECKING:
    from rota.app import App

__all__ = ["scheduler", "schedules"]

T = TypeVar("T")

LOG_LEVELS = ("debug", "info", "warning", "error")
#: Jobs ``rota schedules show`` lists.
SHOWN_RUNS = 10
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

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


@schedules.command("list")
@url_option
@read_url_option
@pass_state
def list_schedules(cli: CliState) -> None:
    """Every schedule with its trigger in words, next and last fire, and last job."""
    store = cli.store_app().reader
    found = store.schedules()
    if not found:
        note("no schedules yet: define one with app.schedule(...)")
        return
    now = store.now()
    console().print(schedules_table(found, last_jobs(store, found), now))
    for problem in overdue_schedules(found, now):
        note(f"warning: {problem.message}")


@schedules.command("show")
@click.argument("name", callback=name_callback("schedule name"))
@url_option
@read_url_option
@pass_state
def show(cli: CliState, name: str) -> None:
    """Show everything about schedule NAME: trigger, policies, arguments, job
    options, its next fires and its latest jobs."""
    store = cli.store_app().reader
    found = _find(store, name)
    now = store.now()
    runs = schedule_runs(store, name, limit=SHOWN_RUNS)
    console().print(
        Group(
            schedule_details(found, last_jobs(store, [found]), now),
            Text("\nnext fires", style="bold underline"),
            next_fires(found, now),
            Text("\nlatest jobs", style="bold underline"),
            *([Text(runs_summary(runs))] if runs.jobs else []),
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
@trigger_options
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
@job_flags
@click.option(
    "--timeout",
    metavar="SECONDS",
    callback=positive_duration_callback,
    help="Stop the command (its whole process group) after this long: 90s, 15m.",
)
@policy_options
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
    priority: int | None,
    timeout: float | None,
    overlap: str | None,
    misfire: str | None,
    grace: str | None,
    jitter: str | None,
    cwd: str | None,
    env: dict[str, str],
    ok_codes: list[int] | None,
    enabled: bool | None,
) -> None:
    """Store schedule NAME that runs the command line after -- (no shell) as a
    job of the built-in rota.cmd task, which only workers started with
    --commands (or of an App(commands=True)) run; or, with --app APP --task
    TASK, a job of that task with the arguments after -- (or --json).

    Adding a NAME that exists replaces it wholly: the settings not given go
    back to their defaults, and the command names each one it reset (`rota
    schedules edit` changes only the settings it is given). Its paused state
    is kept unless --enabled or --paused is given."""
    trigger = trigger_of(cron_expr, tz, interval, at_time)
    options = job_flag_values(queue, host, retries, backoff, priority)
    policies = policy_values(overlap, misfire, grace, jitter)
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
    old = app.store.get_schedule(name)  # (for the message only)
    stored = app.admin.add_schedule(
        name,
        task,
        trigger,
        args=args,
        kwargs=kwargs,
        enabled=enabled,
        options=options or None,
        by=cli_actor(),
        **policies,
    )
    what = command_line(stored) or f"task {stored.task}{call_text(args, kwargs)}"
    verb = "added" if old is None else "replaced"
    click.echo(f"{verb} schedule {stored.name}: {describe(stored)}: {what}")
    if old is not None:
        given = {key: True for key in (*policies, *(_OPTION_FIELDS[k] for k in options))}
        given["concurrency"] = "overlap" in policies  # overlap=queue sets its own key
        reset = reset_settings(old, stored, given)
        if reset:
            note(
                f"back to the default, as not given: {'; '.join(reset)}. "
                f"'rota schedules edit {name}' changes only the settings it is given"
            )
    if at_time is not None and stored.next_fire is not None and stored.next_fire < app.store.now():
        note(f"{at_time} has passed: a scheduler runs it once, as soon as it sees it")


#: The job option each job flag sets.
_OPTION_FIELDS = {
    "queue": "queue",
    "host": "host",
    "retries": "max_attempts",
    "backoff": "retry",
    "priority": "priority",
}


@schedules.command("edit")
@click.argument("name", callback=name_callback("schedule name"))
@trigger_options
@job_flags
@policy_options
@click.option(
    "--enabled/--paused", default=None, help="Let it fire, or pause it.  [default: as it is]"
)
@click.option(
    "--app",
    "app_spec",
    metavar="APP",
    help="The app that defines the schedule's task; a schedule of a command line needs none.",
)
@url_option
@pass_state
def edit(
    cli: CliState,
    name: str,
    cron_expr: str | None,
    tz: str,
    interval: float | None,
    at_time: str | None,
    queue: str | None,
    host: str | None,
    retries: int | None,
    backoff: tuple[float, float] | None,
    priority: int | None,
    overlap: str | None,
    misfire: str | None,
    grace: str | None,
    jitter: str | None,
    enabled: bool | None,
    app_spec: str | None,
) -> None:
    """Change only the given settings of schedule NAME; the others keep their
    stored values (as PATCH /api/schedules/NAME does). A changed trigger
    restarts the schedule from its first fire; --grace none removes the
    grace time. Its task and arguments stay: `rota schedules add` replaces
    them."""
    changes: dict[str, Any] = policy_values(overlap, misfire, grace, jitter)
    trigger = trigger_of(cron_expr, tz, interval, at_time, required=False)
    if trigger is not None:
        changes["trigger"] = trigger
    options = job_flag_values(queue, host, retries, backoff, priority)
    if options:
        changes["options"] = options
    if enabled is not None:
        changes["enabled"] = enabled
    if not changes:
        raise click.UsageError("nothing to change: give a trigger or a setting to set")
    app = cli.load_app(app_spec) if app_spec else command_app(cli)
    old = _find(app.store, name)
    if old.task != COMMAND_TASK and old.task not in app.tasks:
        raise CliError(
            f"schedule {name!r} runs task {old.task!r}: give --app, the app that defines it"
        )
    stored = app.admin.update_schedule(name, by=cli_actor(), **changes)
    click.echo(f"updated schedule {stored.name}: {describe(stored)}")
    for line in _changed(old, stored):
        click.echo(f"  {line}")


def _changed(old: Schedule, new: Schedule) -> list[str]:
    """What an edit changed, setting by setting."""
    changed = reset_settings(old, new, {})
    if old.trigger != new.trigger:
        changed.insert(0, f"trigger {describe(new)} (was {describe(old)})")
    if old.enabled != new.enabled:
        changed.append("enabled" if new.enabled else "paused")
    return changed


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
