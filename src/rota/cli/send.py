"""``rota send APP TASK [ARGS...]``: enqueue one job from the command line."""

from __future__ import annotations

import json
from typing import Any

import click

from rota.cli._support import CliState, duration_callback, note, pass_state, url_option

__all__ = ["parse_arg", "parse_json_call", "send"]


def parse_arg(text: str) -> Any:
    """A positional argument: its JSON value when it parses (``3``, ``true``,
    ``[1, 2]``, ``'"quoted"'``), else the text itself."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def parse_json_call(text: str) -> tuple[list[Any], dict[str, Any]]:
    """``--json``: ``[...]`` (positional arguments) or
    ``{"args": [...], "kwargs": {...}}`` (both keys optional)."""
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise click.BadParameter(f"not valid JSON: {exc}", param_hint="'--json'") from None
    if isinstance(value, list):
        return value, {}
    if not isinstance(value, dict):
        raise click.BadParameter(
            'expected a JSON list of arguments or an object {"args": [...], "kwargs": {...}}',
            param_hint="'--json'",
        )
    unknown = set(value) - {"args", "kwargs"}
    if unknown:
        raise click.BadParameter(
            f"unexpected key(s) {', '.join(sorted(map(repr, unknown)))}; "
            'only "args" and "kwargs" are allowed',
            param_hint="'--json'",
        )
    args = value.get("args", [])
    kwargs = value.get("kwargs", {})
    if not isinstance(args, list):
        raise click.BadParameter('"args" must be a JSON list', param_hint="'--json'")
    if not isinstance(kwargs, dict):
        raise click.BadParameter('"kwargs" must be a JSON object', param_hint="'--json'")
    return args, kwargs


@click.command()
@click.argument("app_spec", metavar="APP")
@click.argument("task_name", metavar="TASK")
@click.argument("args", nargs=-1, metavar="[ARGS]...")
@click.option(
    "--json",
    "json_call",
    metavar="JSON",
    help='All arguments as JSON: \'[1, 2]\' or \'{"args": [1], "kwargs": {"x": 2}}\'.',
)
@click.option("--queue", "-q", help="Send to this queue instead of the task's.")
@click.option("--priority", "-p", type=int, help="Priority (higher runs first).")
@click.option(
    "--in",
    "delay",
    metavar="SECONDS",
    callback=duration_callback,
    help="Run no earlier than this long from now: 30, 90s, 15m, 2h.",
)
@url_option
@pass_state
def send(
    cli: CliState,
    app_spec: str,
    task_name: str,
    args: tuple[str, ...],
    json_call: str | None,
    queue: str | None,
    priority: int | None,
    delay: float | None,
) -> None:
    """Send a job running TASK of APP and print its id.

    Each of ARGS is read as JSON when it parses (3, true, [1,2], '"3"'),
    else as a string. Put -- before arguments that start with a dash.
    """
    if json_call is not None and args:
        raise click.UsageError("give the task's arguments as ARGS or with --json, not both")
    if json_call is not None:
        call_args, call_kwargs = parse_json_call(json_call)
    else:
        call_args, call_kwargs = [parse_arg(a) for a in args], {}
    app = cli.load_app(app_spec)
    task = app.get_task(task_name)
    overrides: dict[str, Any] = {}
    if queue is not None:
        overrides["queue"] = queue
    if priority is not None:
        overrides["priority"] = priority
    if overrides:
        task = task.options(**overrides)
    if delay is not None:
        handle = task.send_in(delay, *call_args, **call_kwargs)
    else:
        handle = task.send(*call_args, **call_kwargs)
    click.echo(handle.id)
    if handle.duplicate:
        note(
            f"duplicate of {handle.id}: a job with the same unique key is pending, running "
            "or finished within its unique window; nothing new was enqueued"
        )
