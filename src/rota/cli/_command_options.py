"""The options of a command line sent or scheduled from the CLI
(``rota send --cmd``, ``rota schedules add ... -- CMD``): where it runs, what
it adds to the environment and which exit codes are a success."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from rota.commands import MAX_EXIT_CODE

__all__ = [
    "CommandLineCommand",
    "command_options",
    "given_command_options",
    "require_separator",
]

F = TypeVar("F", bound=Callable[..., Any])

#: ``ctx.meta`` key: whether the command's words had a ``--``.
_DASHES = "rota.command_line.dashes"


class CommandLineCommand(click.Command):
    """A command that may take a command line after ``--`` (``rota send
    --cmd``, ``rota schedules add``). It notes whether ``--`` was given, for
    :func:`require_separator`, and an option it does not know, given
    without ``--`` where a command line is expected (``ls -la``), is
    refused with the hint to put ``--`` first.

    ``usage`` is the form shown in those messages; :meth:`takes_command_line`
    says whether the words given are for a command line."""

    usage = "-- CMD ARGS..."

    def takes_command_line(self, args: list[str]) -> bool:
        """Whether ``args`` (the words given) ask for a command line."""
        return True

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta[_DASHES] = "--" in args
        words = list(args)  # (click's parse consumes its list)
        try:
            return super().parse_args(ctx, args)
        except click.NoSuchOption as exc:
            if "--" in words or not self.takes_command_line(words):
                raise
            raise click.UsageError(
                f"{exc.format_message()} To pass {exc.option_name} in the command line, "
                f"put -- before the command line: {self.usage}",
                ctx,
            ) from None


def require_separator(what: str, usage: str) -> None:
    """Refuse a command line given without ``--`` before it (``rota send
    --cmd echo hi``, ``rota schedules add s --every 5m echo hi``): the words
    would otherwise be read by rota, an option among them refused or taken
    as rota's own. ``what`` names the form (``with --cmd``, ``for a command
    schedule``); only for a :class:`CommandLineCommand`."""
    if not click.get_current_context().meta.get(_DASHES):
        raise click.UsageError(f"{what}, put -- before the command line: {usage}")


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
