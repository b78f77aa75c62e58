"""What every command shares: the invocation state, ``--url`` and ``--read-url``,
consoles, errors, formats.

Commands read user input through the helpers here so that bad input always
ends the same way: a one-line ``Error: ...`` on stderr and exit code 2 for
usage problems, 1 for everything else, and never a store password.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import IO, TYPE_CHECKING, Any, TypeVar

import click

from rota import _validate
from rota._time import format_duration, parse_duration
from rota.app import App
from rota.errors import InvalidArgument

if TYPE_CHECKING:
    from rich.console import Console

F = TypeVar("F", bound=Callable[..., Any])

#: Width of tables when the output is not a terminal (a pipe or a file):
#: wide enough that job ids and errors are not folded.
PIPE_WIDTH = 200

_PASSWORD = re.compile(r"(?P<head>://[^/\s:@]*:)[^@\s/]+@")


@dataclass
class CliState:
    """Per-invocation state, stored as the click context object."""

    url: str | None = None
    #: ``--read-url``: the read replica that commands which only show read from.
    read_url: str | None = None
    apps: list[App] = field(default_factory=list)
    #: ``--traceback``: show the full traceback of an app that fails to import.
    traceback: bool = False

    def load_app(self, spec: str, *, wait_for_store: bool = False) -> App:
        """The app ``spec`` names (see :func:`rota._loader.load_app`), with
        ``--url`` and ``--read-url`` applied.

        ``wait_for_store``: a module that cannot be imported because its
        store cannot be reached yet is imported again once it can (see
        :func:`rota._store_wait.load_app_waiting`); Ctrl-C meanwhile exits."""
        from rota._loader import load_app
        from rota._store_wait import load_app_waiting

        if self.url:
            # An App() built at import, schedules defined there, and the child
            # processes of `--mode processes` (which load the app again) all
            # read ROTA_URL: they must reach this store too.
            os.environ["ROTA_URL"] = self.url
        if self.read_url:
            os.environ["ROTA_READ_URL"] = self.read_url
        if wait_for_store:
            waited = load_app_waiting(lambda: load_app(spec))
            if waited is None:
                raise click.exceptions.Exit(0)
            app = waited
        else:
            app = load_app(spec)
        if self.url or self.read_url:
            app.close()  # drop a store the module may have opened with its own URL
        if self.url:
            app.url = self.url
        if self.read_url:
            app.read_url = self.read_url
        self._track(app)
        return app

    def app_or_bare(self, spec: str | None, *, wait_for_store: bool = False) -> App:
        """The app ``spec`` names or, without one, an app with no tasks on
        ``--url`` (or ``ROTA_URL``), whose store it may create: enough to
        fire the stored schedules or run command lines."""
        if spec:
            return self.load_app(spec, wait_for_store=wait_for_store)
        return self.store_app(must_exist=False)

    def store_app(self, *, must_exist: bool = True, wait: bool = False) -> App:
        """An app without tasks, for commands that only talk to the store.

        ``must_exist``: a store that does not exist (a missing SQLite file, a
        PostgreSQL schema or MySQL database without rota's tables) is refused
        with an error naming it, rather than created empty (a command run in
        the wrong directory, or with a mistyped URL, would otherwise read or
        steer a new, empty store); a Redis server never reached then fails
        the command at once, unless ``wait`` (a service, as the dashboard,
        waits ``retry_for`` for it)."""
        from rota.stores import require_file

        app = App(self.url, read_url=self.read_url)
        if must_exist:
            require_file(app.url)
            app.must_exist = True
            app.wait_for_store = wait
        self._track(app)
        return app

    def _track(self, app: App) -> None:
        if app not in self.apps:
            self.apps.append(app)
            click.get_current_context().call_on_close(app.close)


pass_state = click.make_pass_decorator(CliState, ensure=True)


def _set_url(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    if value:
        ctx.ensure_object(CliState).url = value


def url_option(f: F) -> F:
    """``--url`` on a subcommand, so it may come after the command name too."""
    return click.option(
        "--url",
        metavar="URL",
        expose_value=False,
        callback=_set_url,
        help="Store URL, overriding the app's (also: rota --url, env ROTA_URL).",
    )(f)


def require_app_or_commands(spec: str | None, allow_commands: bool) -> None:
    """A worker without APP has nothing to run but command lines: it needs
    ``--commands``."""
    if not spec and not allow_commands:
        raise CliUsageError(
            "missing APP: give the app whose tasks to run, or --commands to run only "
            "command lines (rota send --cmd, rota schedules add NAME ... -- CMD)"
        )


def commands_option(f: F) -> F:
    """``--commands``: the worker also runs command-line jobs (``allow_commands``)."""
    return click.option(
        "--commands",
        "allow_commands",
        is_flag=True,
        help="Also run command-line jobs (rota send --cmd, rota schedules add -- CMD, the "
        "dashboard's command forms): whoever can write to the store can then run commands "
        "on this machine.",
    )(f)


def slot_options(f: F) -> F:
    """``--queues``/``-Q``, ``--concurrency``/``-c`` and ``--mode``/``-m``:
    what a worker takes and how it runs it (``rota worker``, ``rota run``)."""
    options = [
        click.option(
            "--queues",
            "-Q",
            default="all",
            show_default=True,
            help="Comma-separated queues to take jobs from; 'all' (the default) for every "
            "queue of the app's tasks, and 'default'.",
        ),
        click.option(
            "--concurrency",
            "-c",
            type=click.IntRange(min=1),
            default=8,
            show_default=True,
            help="Jobs run at once by the worker, at most: in threads mode fewer run while "
            "short jobs would only take turns on the interpreter's lock.",
        ),
        click.option(
            "--mode",
            "-m",
            type=click.Choice(["threads", "processes", "async"]),
            default="threads",
            show_default=True,
            help="Threads (I/O-bound), processes (CPU-bound, hard timeouts) or async "
            "(async def tasks).",
        ),
    ]
    for option in reversed(options):
        f = option(f)
    return f


def _set_read_url(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    if value:
        ctx.ensure_object(CliState).read_url = value


def read_url_option(f: F) -> F:
    """``--read-url`` on a command that only shows: read from this replica."""
    return click.option(
        "--read-url",
        metavar="URL",
        expose_value=False,
        callback=_set_read_url,
        help="PostgreSQL or MySQL read replica to read from (also: env ROTA_READ_URL, or "
        "the store URL's read_url= option).",
    )(f)


# -- output --------------------------------------------------------------------


def console(*, stderr: bool = False) -> Console:
    """A rich console that prints text literally (no markup, no guessing of colours).
    (rich is imported here, on first use: it is a tenth of a command's start,
    and ``rota worker`` never prints through it.)"""
    from rich.console import Console

    stream: IO[str] = sys.stderr if stderr else sys.stdout
    width = None
    if not stream.isatty() and "COLUMNS" not in os.environ:
        width = PIPE_WIDTH
    return Console(
        file=stream, stderr=stderr, markup=False, highlight=False, emoji=False, width=width
    )


def redact_text(text: str) -> str:
    """``text`` with the password of every URL in it replaced by ``***``."""
    return _PASSWORD.sub(r"\g<head>***@", text)


class CliError(click.ClickException):
    """An error shown as one line, ``Error: ...``, on stderr; exit code 1."""

    def __init__(self, message: str) -> None:
        super().__init__(redact_text(message))

    def show(self, file: IO[Any] | None = None) -> None:
        """Print the message in red on stderr, on one line whatever the width."""
        from rich.text import Text

        line = Text.assemble(("Error: ", "bold red"), self.message)
        console(stderr=True).print(line, soft_wrap=True)


class CliUsageError(CliError):
    """A :class:`CliError` caused by bad input; exit code 2."""

    exit_code = 2


def note(message: str) -> None:
    """A line of information for the person at the terminal (stderr)."""
    console(stderr=True).print(message, soft_wrap=True)


# -- input ---------------------------------------------------------------------


def duration_callback(
    ctx: click.Context, param: click.Parameter, value: str | None
) -> float | None:
    """Parse ``30``, ``1.5``, ``90s``, ``15m``, ``2h``, ``7d`` into seconds."""
    return _duration(ctx, param, value, positive=False)


def positive_duration_callback(
    ctx: click.Context, param: click.Parameter, value: str | None
) -> float | None:
    """As :func:`duration_callback`, above 0 (a timeout)."""
    return _duration(ctx, param, value, positive=True)


def _duration(
    ctx: click.Context, param: click.Parameter, value: str | None, *, positive: bool
) -> float | None:
    if value is None:
        return None
    what = (param.name or "duration").replace("_", " ")
    try:
        return parse_duration(value, what=what, positive=positive)
    except InvalidArgument as exc:
        raise click.BadParameter(str(exc), ctx, param) from None


def backoff_callback(
    ctx: click.Context, param: click.Parameter, value: str | None
) -> tuple[float, float] | None:
    """``BASE,MAX`` durations (``30s,1h``) as seconds, base no longer than max."""
    if value is None:
        return None
    first, comma, last = value.partition(",")
    try:
        if not comma:
            raise InvalidArgument(f"give BASE,MAX (e.g. 30s,1h), not {value!r}")
        base = parse_duration(first.strip(), what="backoff base")
        cap = parse_duration(last.strip(), what="backoff max")
    except InvalidArgument as exc:
        raise click.BadParameter(str(exc), ctx, param) from None
    if cap < base:
        raise click.BadParameter(f"the base ({first}) is longer than the max ({last})", ctx, param)
    return base, cap


def name_callback(what: str) -> Callable[[click.Context, click.Parameter, Any], Any]:
    """A click callback that refuses a bad name (empty, too long, control
    characters; see :func:`rota._validate.name`) with exit code 2; None passes."""

    def check(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        if value is None:
            return None
        try:
            return _validate.name(value, what)
        except InvalidArgument as exc:
            raise click.BadParameter(str(exc), ctx, param) from None

    return check


def split_list(value: str) -> list[str]:
    """``"a, b,,c"`` -> ``["a", "b", "c"]``."""
    return [part.strip() for part in value.split(",") if part.strip()]


# -- formats -------------------------------------------------------------------


def fmt_time(epoch: float | None) -> str:
    """A local date and time to the second with its zone (``2026-12-04
    02:00:00 UTC``), or ``-``. A stored time no date can show (written by an
    older rota or by hand) is shown as it is: ``epoch -90000000000``."""
    if epoch is None:
        return "-"
    try:
        return datetime.fromtimestamp(epoch).astimezone().strftime("%Y-%m-%d %H:%M:%S %Z")
    except (ValueError, OverflowError, OSError):
        return f"epoch {epoch!r}"


def fmt_when(epoch: float | None, now: float) -> str:
    """A time with how far it is from ``now``: ``2024-05-01 12:00:00 (3m 05s ago)``."""
    if epoch is None:
        return "-"
    delta = now - epoch
    relative = f"{format_duration(delta)} ago" if delta >= 0 else f"in {format_duration(-delta)}"
    return f"{fmt_time(epoch)} ({relative})"


def summary(text: str | None, width: int = 60) -> str:
    """The first line of ``text``, cut to ``width`` characters; ending in
    ``…`` when some of it was left out (a cut, or the lines after it), so
    that a table keeps one line per row."""
    lines = (text or "").strip().splitlines()
    if not lines:
        return ""
    line = lines[0].rstrip()
    if len(line) > width:
        return line[: width - 1] + "…"
    return line + " …" if len(lines) > 1 else line


def resolve_queues(app: App, value: str) -> list[str]:
    """Queue names from ``--queues``: a comma-separated list, or ``all`` for
    every queue the app's tasks declare, plus ``default``."""
    names = split_list(value)
    if names == ["all"]:
        return sorted({task.opts.queue for task in app.tasks.values()} | {"default"})
    if not names:
        raise CliUsageError("--queues names no queue")
    return names
