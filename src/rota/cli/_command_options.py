"""The options of a command line sent or scheduled from the CLI
(``rota send --cmd``, ``rota schedules add ... -- CMD``): where it runs, what
it adds to the environment and which exit codes are a success."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from rota.commands import MAX_EXIT_CODE

__all__ = ["command_options", "given_command_options"]

F = TypeVar("F", bound=Callable[..., Any])


def _env(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> dict[str, str]:
    env: dict[str, str] = {}
    for item in values:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise click.BadParameter(f"{item!r} is not NAME=VALUE", ctx, param)
        env[name] = value
    return env


def _ok_codes(ctx: click.Context, param: click.Parameter, value: str | None) -> list[int] | None:
    if value is None:
        return None
    try:
        codes = [int(code) for code in value.split(",")]
    except ValueError:
        raise click.BadParameter(
            f"{value!r} is not a list of exit codes such as 0,2", ctx, param
        ) from None
    for code in codes:
        if not 0 <= code <= MAX_EXIT_CODE:
            raise click.BadParameter(
                f"{code} is not an exit code: they are 0 to {MAX_EXIT_CODE}", ctx, param
            )
    return codes


def command_options(f: F) -> F:
    """``--cwd``, ``--env NAME=VALUE`` (repeated) and ``--ok-codes 0,2`` on a
    command that sends or schedules a command line."""
    f = click.option(
        "--ok-codes",
        metavar="CODES",
        callback=_ok_codes,
        help="Exit codes that are a success, e.g. 0,2.  [default: 0]",
    )(f)
    f = click.option(
        "--env",
        metavar="NAME=VALUE",
        multiple=True,
        callback=_env,
        help="Add to the command's environment (repeat for more).",
    )(f)
    return click.option(
        "--cwd", metavar="DIR", help="Run the command in this directory of the worker's machine."
    )(f)


def given_command_options(
    cwd: str | None, env: dict[str, str], ok_codes: list[int] | None
) -> dict[str, Any]:
    """The options given, for :func:`rota.commands.command_call` (each
    checked there as :class:`rota.commands.CommandSpec` checks it)."""
    return {"cwd": cwd, "env": env or None, "ok_codes": ok_codes}
