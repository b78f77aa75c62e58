"""The ``rota`` command line: ``rota worker``, ``rota send``, ``rota jobs ...`` and more.

Each command (or group of commands) lives in its own module of this package
and is registered in :data:`COMMANDS` below. Modules are imported only when
their command is used (or when ``rota --help`` lists them), so a command
whose optional dependencies are missing never breaks the others: it shows
up as unavailable and says which extra to install.

Adding a command
----------------
1. Write ``rota/cli/<module>.py`` defining a click command or group, using
   the helpers of :mod:`rota.cli._support` (``pass_state``, ``url_option``,
   ``CliState.load_app`` / ``CliState.store_app``).
2. Add one line to :data:`COMMANDS`: ``"name": Entry("module:attribute")``,
   with ``extra="..."`` when the module needs an optional extra.

An entry whose module does not exist (yet) is simply not listed.

Errors: any :class:`rota.errors.RotaError` escaping a command is printed as
one line, ``Error: ...``, on stderr (store passwords redacted), with exit
code 2 for :class:`rota.errors.InvalidArgument` (bad usage) and 1 otherwise.
An app file that does not import is reported in a few lines (file, line,
error); ``--traceback`` or ``ROTA_DEBUG=1`` shows the whole traceback.

Logging: short commands print rota's warnings and errors on stderr, one line
each (``warning: cannot reach Redis at ...``); long-running commands
configure logging themselves, and then these lines step aside.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import os
import sys
from typing import Any, NamedTuple

import click

from rota import __version__
from rota._loader import AppImportError
from rota.cli._support import CliError, CliState, CliUsageError, redact_text
from rota.errors import (
    InvalidArgument,
    InvalidSchedule,
    PayloadTooLarge,
    RotaError,
    SerializationError,
    UnknownTask,
)
from rota.stores.base import is_service_notice

__all__ = ["COMMANDS", "Entry", "main"]


class Entry(NamedTuple):
    """Where a top-level command is defined: ``"module:attribute"`` inside ``rota.cli``,
    and the extra (``pip install 'rota[extra]'``) its imports need, if any."""

    target: str
    extra: str | None = None


#: Top-level commands, by name. Keep sorted by name.
COMMANDS: dict[str, Entry] = {
    "audit": Entry("audit:audit"),
    "jobs": Entry("jobs:jobs"),
    "limits": Entry("limits:limits"),
    "migrate": Entry("migrate:migrate"),
    "queues": Entry("queues:queues"),
    "run": Entry("run:run", extra="web"),
    "schedules": Entry("schedules:schedules"),
    "scheduler": Entry("schedules:scheduler"),
    "send": Entry("send:send"),
    "status": Entry("status:status"),
    "users": Entry("users:users"),
    "web": Entry("web:web", extra="web"),
    "worker": Entry("worker:worker"),
}


class _ShortCommandHandler(logging.Handler):
    """rota's warnings on the current stderr, one line each, as long as
    nothing configured the root logger (long-running commands do); notices
    meant for long-running processes (:data:`SERVICE_NOTICE`) are left out."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)

    def emit(self, record: logging.LogRecord) -> None:
        if logging.getLogger().handlers:
            return  # logging is configured: the record reaches those handlers
        if is_service_notice(record):
            return
        try:
            line = f"{record.levelname.lower()}: {record.getMessage()}"
            sys.stderr.write(redact_text(line) + "\n")
        except Exception:
            self.handleError(record)


def _log_warnings() -> None:
    """Install :class:`_ShortCommandHandler` on the ``rota`` logger, once."""
    logger = logging.getLogger("rota")
    if not any(isinstance(h, _ShortCommandHandler) for h in logger.handlers):
        logger.addHandler(_ShortCommandHandler())


def _module_name(entry: Entry) -> str:
    return f"{__name__}.{entry.target.partition(':')[0]}"


def _unavailable(name: str, entry: Entry, error: ImportError) -> click.Command:
    """A stand-in for a command whose module cannot be imported."""
    install = f"pip install 'rota[{entry.extra}]'" if entry.extra else "reinstall rota"
    missing = error.name or str(error)
    message = f"'rota {name}' needs {missing!r}, which is not installed: {install}"

    def fail(**_: Any) -> None:
        raise CliError(message)

    return click.Command(
        name,
        callback=fail,
        help=message,
        short_help=f"(unavailable: {install})",
        add_help_option=False,
        context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
    )


#: rota's errors of bad input (docs/guarantees.md, section 7): like click's
#: usage errors, one line and exit code 2. Any other RotaError exits 1.
_BAD_INPUT = (InvalidArgument, SerializationError, PayloadTooLarge, UnknownTask, InvalidSchedule)


class RotaGroup(click.Group):
    """The root group: lazy subcommands and one-line errors."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        """The registered commands whose module exists, plus any added directly."""
        names = set(super().list_commands(ctx))
        for name, entry in COMMANDS.items():
            if importlib.util.find_spec(_module_name(entry)) is not None:
                names.add(name)
        return sorted(names)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """Import the command's module on first use."""
        command = super().get_command(ctx, cmd_name)
        if command is not None or cmd_name not in COMMANDS:
            return command
        entry = COMMANDS[cmd_name]
        module_name = _module_name(entry)
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            if isinstance(exc, ModuleNotFoundError) and exc.name == module_name:
                return None  # registered but not written yet
            return _unavailable(cmd_name, entry, exc)
        found = getattr(module, entry.target.partition(":")[2])
        if not isinstance(found, click.Command):
            raise TypeError(f"{entry.target} is not a click command")
        return found

    def invoke(self, ctx: click.Context) -> Any:
        """Run the command; turn rota's errors into one-line messages."""
        try:
            return super().invoke(ctx)
        except AppImportError as exc:
            if getattr(ctx.obj, "traceback", False) or os.environ.get("ROTA_DEBUG") == "1":
                raise
            raise CliUsageError(
                f"{exc}\n(--traceback or ROTA_DEBUG=1 shows the full traceback)"
            ) from None
        except RotaError as exc:
            error = CliUsageError if isinstance(exc, _BAD_INPUT) else CliError
            raise error(str(exc)) from None


@click.group(
    cls=RotaGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.option(
    "--url",
    envvar="ROTA_URL",
    metavar="URL",
    help="Store URL (sqlite:///path, redis://host:port/db, postgresql://user@host:port/db, "
    "mysql://user@host:port/db); overrides the app's. Env: ROTA_URL.",
)
@click.option(
    "--traceback",
    "show_traceback",
    is_flag=True,
    help="Show the full traceback of an app that fails to import. Env: ROTA_DEBUG=1.",
)
@click.version_option(__version__, "-V", "--version", prog_name="rota")
@click.pass_context
def main(ctx: click.Context, url: str | None, show_traceback: bool) -> None:
    """rota: send, schedule, run and watch background jobs.

    APP arguments name a rota App: module:attribute or path/to/file.py:attribute
    (attribute defaults to "app").
    """
    _log_warnings()
    ctx.obj = CliState(url=url or None, traceback=show_traceback)
