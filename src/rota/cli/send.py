"""``rota send APP TASK [ARGS...]`` and ``rota send [APP] --cmd -- CMD``: enqueue one job
from the command line."""

from __future__ import annotations

import json
import os
import re
import shlex
from typing import Any

import click

from rota import _json, _validate, commands
from rota.app import App
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
    duration_callback,
    name_callback,
    note,
    pass_state,
    positive_duration_callback,
    url_option,
)
from rota.commands import COMMAND_TASK, command_call, task_to_send
from rota.errors import JobFailed, SerializationError, StoreError
from rota.stores import require_file
from rota.task import JobHandle, Task

__all__ = ["call_arguments", "command_app", "parse_arg", "parse_json_call", "send", "task_call"]

_JSON_HINT = "'--json'"
_COMMAND_USAGE = "rota send [APP] --cmd -- CMD ARGS..."


def parse_arg(text: str) -> Any:
    """A positional argument: its JSON value when it parses (``3``, ``true``,
    ``[1, 2]``, ``'"quoted"'``), else the text itself. ``NaN``, ``Infinity``
    and nesting too deep to read are refused (:class:`click.BadParameter`)."""
    try:
        return _json.parse(text, what=f"argument {_shown(text)}")
    except _json.InvalidJSON:
        return text
    except SerializationError as exc:
        raise click.BadParameter(str(exc), param_hint="ARGS") from None


def parse_json_call(text: str) -> tuple[list[Any], dict[str, Any]]:
    """``--json``: ``[...]`` (positional arguments) or
    ``{"args": [...], "kwargs": {...}}`` (both keys optional)."""
    try:
        value = _json.parse(text)
    except SerializationError as exc:
        raise click.BadParameter(str(exc), param_hint=_JSON_HINT) from None
    if isinstance(value, list):
        return value, {}
    if not isinstance(value, dict):
        raise click.BadParameter(
            'expected a JSON list of arguments or an object {"args": [...], "kwargs": {...}}',
            param_hint=_JSON_HINT,
        )
    unknown = set(value) - {"args", "kwargs"}
    if unknown:
        raise click.BadParameter(
            f"unexpected key(s) {', '.join(sorted(map(repr, unknown)))}; "
            'only "args" and "kwargs" are allowed',
            param_hint=_JSON_HINT,
        )
    args = value.get("args", [])
    kwargs = value.get("kwargs", {})
    if not isinstance(args, list):
        raise click.BadParameter('"args" must be a JSON list', param_hint=_JSON_HINT)
    if not isinstance(kwargs, dict):
        raise click.BadParameter('"kwargs" must be a JSON object', param_hint=_JSON_HINT)
    return args, kwargs


def _shown(text: str) -> str:
    return repr(text) if len(text) <= 40 else repr(text[:37] + "...")


def call_arguments(
    args: tuple[str, ...], json_call: str | None
) -> tuple[list[Any], dict[str, Any]]:
    """The call's arguments from ARGS or ``--json``, checked as a send checks them."""
    if json_call is not None and args:
        raise click.UsageError("give the task's arguments as ARGS or with --json, not both")
    if json_call is not None:
        call_args, call_kwargs = parse_json_call(json_call)
    else:
        call_args, call_kwargs = [parse_arg(a) for a in args], {}
    try:
        _validate.check_call(tuple(call_args), call_kwargs, "task arguments")
    except SerializationError as exc:
        hint = _JSON_HINT if json_call is not None else "ARGS"
        raise click.BadParameter(str(exc), param_hint=hint) from None
    return call_args, call_kwargs


#: An unknown option that is a negative number: an argument meant for the task.
_NEGATIVE = re.compile(r"-(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")


class _SendCommand(CommandLineCommand):
    """``rota send``, which also reads ``rota send --cmd -- CMD ARGS...``: a
    command line sent without APP, to the store of ``--url`` (or ``ROTA_URL``)."""

    usage = _COMMAND_USAGE

    def takes_command_line(self, args: list[str]) -> bool:
        return "--cmd" in args

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        """The arguments, with an empty APP where ``--cmd`` comes with no word
        before ``--`` that is not an option or an option's value. The words
        after APP and before ``--`` are noted (``rota.send.before``): with
        ``--cmd`` there must be none."""
        if "--" in args:
            cut = args.index("--")
            try:
                given, _, _ = self.make_parser(ctx).parse_args(args[:cut])
            except click.UsageError:
                given = {}  # (the parse below reports it)
            task_name, words = given.get("task_name"), given.get("args")
            before = [task_name] if isinstance(task_name, str) else []
            ctx.meta["rota.send.before"] = before + list(words if isinstance(words, tuple) else ())
            if given.get("command") and not isinstance(given.get("app_spec"), str):
                args = [*args[:cut], "", *args[cut:]]
        words = list(args)  # (click's parse consumes its list)
        try:
            return super().parse_args(ctx, args)
        except click.NoSuchOption as exc:
            number = next((w for w in words if _NEGATIVE.fullmatch(w)), None)
            if number is None or not number.startswith(exc.option_name):
                raise
            raise click.UsageError(
                f"{number} is read as an option: to send it as an argument, put -- "
                f"before the arguments (rota send APP TASK -- {number} ...)",
                ctx,
            ) from None


@click.command(cls=_SendCommand)
@click.argument("app_spec", metavar="[APP]", required=False)
@click.argument("task_name", metavar="TASK", required=False)
@click.argument("args", nargs=-1, metavar="[ARGS]...")
@click.option(
    "--cmd",
    "command",
    is_flag=True,
    help="Send the command line after -- as a job of the built-in rota.cmd task.",
)
@click.option(
    "--json",
    "json_call",
    metavar="JSON",
    help='All arguments as JSON: \'[1, 2]\' or \'{"args": [1], "kwargs": {"x": 2}}\'.',
)
@click.option(
    "--queue",
    "-q",
    callback=name_callback("queue"),
    help="Send to this queue instead of the task's.",
)
@click.option(
    "--priority",
    "-p",
    type=click.IntRange(_validate.MIN_PRIORITY, _validate.MAX_PRIORITY),
    help="Priority (higher runs first).",
)
@click.option(
    "--retries",
    type=click.IntRange(0, _validate.MAX_RETRIES),
    help="Run the job again up to N times if it fails, with exponential backoff "
    "(default: the task's retries).",
)
@click.option(
    "--backoff",
    metavar="BASE,MAX",
    callback=backoff_callback,
    help="Retry delays double from BASE up to MAX, each shortened at random by up to "
    "half, e.g. 30s,1h (default: the task's).",
)
@click.option(
    "--host",
    callback=name_callback("host"),
    help="Run only on a worker of this host name (rota worker --host, by default "
    "the machine's hostname), or on any once that host is gone for the workers' "
    "--host-grace.",
)
@click.option(
    "--in",
    "delay",
    metavar="SECONDS",
    callback=duration_callback,
    help="Run no earlier than this long from now: 30, 90s, 15m, 2h.",
)
@click.option(
    "--wait",
    "-w",
    is_flag=True,
    help="Wait for the job to finish; print its result as JSON, or its error and exit 1.",
)
@click.option(
    "--timeout",
    metavar="SECONDS",
    callback=duration_callback,
    help="With --wait: give up after this long (exit 1), e.g. 30, 5m. Default: no limit.",
)
@click.option(
    "--cmd-timeout",
    "command_timeout",
    metavar="SECONDS",
    callback=positive_duration_callback,
    help="With --cmd: stop the command (its whole process group) after this long: 90s, 15m.",
)
@command_options
@url_option
@pass_state
def send(
    cli: CliState,
    app_spec: str | None,
    task_name: str | None,
    args: tuple[str, ...],
    command: bool,
    json_call: str | None,
    queue: str | None,
    priority: int | None,
    retries: int | None,
    backoff: tuple[float, float] | None,
    host: str | None,
    delay: float | None,
    wait: bool,
    timeout: float | None,
    command_timeout: float | None,
    cwd: str | None,
    env: dict[str, str],
    ok_codes: list[int] | None,
) -> None:
    """Send a job running TASK of APP and print its id.

    Each of ARGS is read as JSON when it parses (3, true, [1,2], '"3"'),
    else as a string; the ARGS of a task made with app.command are words
    appended to its command line, as they are. Put -- before arguments that
    start with a dash.
    With --wait, the result follows the id once the job has finished.

    With --cmd, the words after -- are a command line that a worker
    started with --commands runs as a job (no shell; --cwd, --env and
    --ok-codes set where it runs, what it adds to the environment and which
    exit codes are a success):
    rota send --cmd -- python crawl.py --site x sends it to the store of
    --url (or ROTA_URL; without either, to ./rota.db if it exists); rota
    send APP --cmd -- ... to APP's.
    """
    if timeout is not None and not wait:
        raise click.UsageError("--timeout goes with --wait")
    if command and json_call is not None:
        raise click.UsageError("--cmd takes the command line after --, not --json")
    _check_words(app_spec, task_name, command)
    assert task_name is not None
    settings = given_command_options(cwd, env, ok_codes)
    if command:
        call_args, call_kwargs = command_call([task_name, *args], command_timeout, **settings)
        task_name = COMMAND_TASK
    elif command_timeout is not None or any(v is not None for v in settings.values()):
        raise click.UsageError("--cmd-timeout, --cwd, --env and --ok-codes go with --cmd")
    app = cli.load_app(app_spec) if app_spec else command_app(cli)
    # (a command line is sent from any app; only workers that run them have rota.cmd)
    task = task_to_send(app, task_name)
    if not command:
        call_args, call_kwargs = task_call(task, args, json_call)
    given = {
        "queue": queue,
        "priority": priority,
        "retries": retries,
        "backoff": backoff,
        "host": host,
    }
    overrides = {name: value for name, value in given.items() if value is not None}
    # through app.admin, as the dashboard's sends: validated alike, and audited (job.send)
    handle = app.admin.send(
        task_name,
        call_args,
        call_kwargs,
        options=overrides or None,
        delay=delay,
        by=cli_actor(),
    )
    click.echo(handle.id)
    if handle.duplicate:
        note(
            f"duplicate of {handle.id}: a job with the same unique key is pending, running "
            "or finished within its unique window; nothing new was enqueued"
        )
    if wait:
        _print_result(handle, timeout)


def _check_words(app_spec: str | None, task_name: str | None, command: bool) -> None:
    """Refuse a send that lacks APP, TASK or the command line, and one of a
    command line with words before ``--`` other than APP."""
    if not command:
        if not app_spec or task_name is None:
            raise click.UsageError("missing APP and TASK" if not app_spec else "missing TASK")
        return
    if task_name is None:
        raise click.UsageError(f"missing the command line: {_COMMAND_USAGE}")
    # `rota send --cmd echo hi`: "echo" is read as APP
    require_separator("with --cmd", _COMMAND_USAGE)
    meta = click.get_current_context().meta
    before = meta.get("rota.send.before") or []
    if before:  # `rota send APP add --cmd -- echo` would run "add echo"
        raise click.UsageError(
            f"with --cmd, only APP comes before --, not also {shlex.join(before)}: "
            f"the whole command line goes after -- ({_COMMAND_USAGE})"
        )


def command_app(cli: CliState) -> App:
    """The app without tasks that a command line is sent or scheduled through
    without APP: on the store of ``--url`` (or ``ROTA_URL``), created if need
    be. Without either, the default store, ``./rota.db``, only if it exists:
    a fleet that forgot its ``ROTA_URL`` gets an error rather than a new
    store no worker reads (a worker or ``rota run`` creates it)."""
    app = cli.store_app(must_exist=False)
    if cli.url:
        return app
    try:
        require_file(app.url)
    except StoreError:
        path = os.path.abspath(app.url.removeprefix("sqlite:///"))
        raise CliError(
            f"no store given and no {path}: pass --url or set ROTA_URL to the store the "
            "workers use (a worker or `rota run` creates ./rota.db)"
        ) from None
    return app


def task_call(
    task: Task[Any, Any] | None, words: tuple[str, ...], json_call: str | None
) -> tuple[list[Any], dict[str, Any]]:
    """The call of ``task`` from ARGS or ``--json``: for a task of
    ``app.command``, ARGS are the words it appends to its command line
    (``extra_args``, taken as they are); for any other (or an unknown one,
    None), as :func:`call_arguments` reads them."""
    if commands.is_fixed_command(task) and json_call is None:
        return [], {"extra_args": list(words)} if words else {}
    return call_arguments(words, json_call)


def _print_result(handle: JobHandle[Any], timeout: float | None) -> None:
    """The job's result as JSON on stdout, or its error (exit 1)."""
    try:
        value = handle.result(timeout=timeout)
    except JobFailed as exc:
        raise CliError(f"job {handle.id} failed: {exc.error or 'no error recorded'}") from None
    click.echo(json.dumps(value, ensure_ascii=False))
