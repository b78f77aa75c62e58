"""External commands run as jobs: :meth:`rota.App.command` and the built-in ``rota.cmd``.

A command runs in a process group of its own (a new session), so it is
stopped as a group, grandchildren included: on its timeout, when its job is
cancelled, and when the worker stops, the group gets SIGTERM and, if any of
it is still running ``grace`` seconds later, SIGKILL. Processes the command
leaves behind when it exits are stopped the same way: a command's processes
end with its job. The group's leader is a guard (:mod:`rota._command_guard`)
that stops the group the same way when the worker dies, even by SIGKILL,
its SIGKILL coming within half the job's lease: before another worker can
start the job again.

Output is read by one thread per stream into a :class:`Tail` that keeps the
last ``output_cap`` bytes; the whole output also goes to the job's kept log
when the job context can take it (``log_output``).

An exit code outside ``ok_codes``, or a kill, fails the attempt with
:class:`CommandFailed` naming the code or the signal and the last lines of
stderr; retries and backoff then apply as for any task. A successful attempt
returns ``{"exit_code", "duration", "stdout", "stderr", "truncated"}``.

The built-in task ``rota.cmd`` (:data:`COMMAND_TASK`) runs the command line
it is sent (``rota send [APP] --cmd -- python crawl.py``, ``rota schedules add
NAME --every 60 -- python crawl.py``). Only workers that enable it run it
(``App(commands=True)`` or ``rota worker APP --commands``): such a worker
runs whatever command line whoever can write to the store sends it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import psutil

from rota import _json, _validate
from rota._time import parse_duration
from rota.context import JobContext, current_job
from rota.errors import InvalidArgument, RotaError
from rota.models import NewJob, Schedule
from rota.task import Task, TaskOptions

if TYPE_CHECKING:
    from rota.app import App

__all__ = [
    "COMMAND_TASK",
    "HIDDEN",
    "CommandFailed",
    "CommandSpec",
    "CommandTask",
    "Tail",
    "command_call",
    "command_line",
    "command_line_of",
    "command_options_of",
    "guarded",
    "is_fixed_command",
    "parse_command_line",
    "refuse_reserved",
    "register",
    "run",
    "shown_kwargs",
    "task_to_send",
    "terminate_all",
]

log = logging.getLogger("rota.commands")

#: The name of the built-in task that runs the command line it is sent.
COMMAND_TASK = "rota.cmd"
#: What a display shows in place of the value of a command's environment variable.
HIDDEN = "***"
#: The highest exit code a process can have (``ok_codes`` are 0 to this).
MAX_EXIT_CODE = 255
DEFAULT_OUTPUT_CAP = 65536
MAX_OUTPUT_CAP = 16 * 1024 * 1024
_STDERR_LINES = 10
_STDERR_CHARS = 2000
_LAST_LINE_CHARS = 300
_READ_SIZE = 65536
_POLL = 0.05
#: The program that leads each command's process group (run by its path).
GUARD = str(Path(__file__).with_name("_command_guard.py"))
#: Seconds a command has between SIGTERM and SIGKILL, unless it says otherwise.
DEFAULT_GRACE = 5.0
_LEFTOVER = "left running when the command exited"


class CommandFailed(RotaError):
    """A command exited with a code outside its ``ok_codes``, was killed, or
    could not start."""


@dataclass(frozen=True, slots=True)
class CommandSpec:
    """A validated command line and how to run it (see :meth:`build`)."""

    argv: tuple[str, ...]
    cwd: str | None = None
    env: tuple[tuple[str, str], ...] = ()
    shell: bool = False
    timeout: float | None = None
    ok_codes: tuple[int, ...] = (0,)
    output_cap: int = DEFAULT_OUTPUT_CAP
    grace: float = DEFAULT_GRACE

    @classmethod
    def build(
        cls,
        argv: object,
        *,
        cwd: object = None,
        env: object = None,
        shell: object = False,
        timeout: Any = None,
        ok_codes: object = (0,),
        output_cap: object = DEFAULT_OUTPUT_CAP,
        grace: Any = DEFAULT_GRACE,
    ) -> CommandSpec:
        """Check every field, raising :class:`InvalidArgument` with what to fix.

        ``argv`` is a non-empty list of strings, or with ``shell=True`` one
        string for ``/bin/sh -c``. ``env`` entries are added to the worker's
        environment. ``timeout`` and ``grace`` are seconds (or ``"5m"``);
        ``ok_codes`` the exit codes (0 to 255) that mean success."""
        if not isinstance(shell, bool):
            raise InvalidArgument(f"shell must be True or False, not {shell!r}")
        if cwd is not None and (not isinstance(cwd, str) or not cwd):
            raise InvalidArgument(f"cwd must be a directory path, not {cwd!r}")
        return cls(
            argv=_argv(argv, shell),
            cwd=cwd,
            env=_env(env),
            shell=shell,
            timeout=None
            if timeout is None
            else parse_duration(timeout, what="timeout", positive=True),
            ok_codes=_ok_codes(ok_codes),
            output_cap=_validate.integer(output_cap, "output_cap", 1, MAX_OUTPUT_CAP),
            grace=parse_duration(grace, what="grace"),
        )

    def extended(self, extra: Sequence[str]) -> CommandSpec:
        """This command with ``extra`` arguments appended (shell-quoted for a
        shell command line)."""
        if not extra:
            return self
        if self.shell:
            return replace(self, argv=(f"{self.argv[0]} {shlex.join(extra)}",))
        return replace(self, argv=self.argv + tuple(extra))

    def line(self) -> str:
        """The command line as a shell would read it."""
        return self.argv[0] if self.shell else shlex.join(self.argv)


def _argv(value: object, shell: bool) -> tuple[str, ...]:
    if shell:
        if not isinstance(value, str) or not value.strip():
            raise InvalidArgument(
                f"with shell=True, argv is one command line string, not {value!r}"
            )
        return (value,)
    if isinstance(value, str):
        raise InvalidArgument(
            f"argv must be a list of strings such as {shlex.split(value)!r}, not the string "
            f"{value!r}; pass shell=True to run a string through /bin/sh"
        )
    if not isinstance(value, list | tuple) or not value:
        raise InvalidArgument(f"argv must be a non-empty list of strings, not {value!r}")
    return _strings(value, "argv")


def _strings(value: Sequence[object], what: str) -> tuple[str, ...]:
    for index, item in enumerate(value):
        if not isinstance(item, str) or "\0" in item:
            raise InvalidArgument(f"{what}[{index}] must be a string without NUL, not {item!r}")
    if what == "argv" and not value[0]:
        raise InvalidArgument("argv[0], the program, must not be empty")
    return tuple(str(item) for item in value)


def _env(value: object) -> tuple[tuple[str, str], ...]:
    if value is None:
        return ()
    if not isinstance(value, Mapping):
        raise InvalidArgument(f"env must be a dict of strings, not {value!r}")
    for key, item in value.items():
        if not isinstance(key, str) or not key or "=" in key or "\0" in key:
            raise InvalidArgument(f"env name {key!r} must be a non-empty string without '='")
        if not isinstance(item, str) or "\0" in item:
            raise InvalidArgument(f"env value of {key} must be a string, not {item!r}")
    return tuple(sorted(value.items()))


def _ok_codes(value: object) -> tuple[int, ...]:
    if not isinstance(value, list | tuple) or not value:
        raise InvalidArgument(f"ok_codes must be a non-empty list of exit codes, not {value!r}")
    return tuple(_validate.integer(code, "ok_codes item", 0, MAX_EXIT_CODE) for code in value)


def extra_args(value: object) -> tuple[str, ...]:
    """The ``extra_args`` of a send: a list of strings, or None."""
    if value is None:
        return ()
    if not isinstance(value, list | tuple):
        raise InvalidArgument(f"extra_args must be a list of strings, not {value!r}")
    return _strings(value, "extra_args")


# -- output ------------------------------------------------------------------------


class Tail:
    """The last ``cap`` bytes written, and whether anything before them was dropped."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.total = 0
        self._data = bytearray()

    def write(self, chunk: bytes) -> None:
        """Append ``chunk``, dropping the oldest bytes beyond the cap."""
        self.total += len(chunk)
        self._data += chunk
        excess = len(self._data) - self.cap
        if excess > 0:
            del self._data[:excess]

    @property
    def truncated(self) -> bool:
        """True once more than ``cap`` bytes were written."""
        return self.total > self.cap

    def text(self) -> str:
        """The kept bytes as text (undecodable bytes replaced)."""
        return self._data.decode(errors="replace")


Sink = Callable[[str, bytes], object]


def _pump(stream: IO[bytes], name: str, tail: Tail, sink: Sink | None) -> None:
    fd = stream.fileno()
    try:
        while chunk := os.read(fd, _READ_SIZE):
            tail.write(chunk)
            if sink is not None:
                try:
                    sink(name, chunk)
                except Exception:
                    log.exception(
                        "the job log refused %s output; output is kept in the result", name
                    )
                    sink = None
    finally:
        stream.close()


# -- process groups ------------------------------------------------------------------


class _Group:
    """A running command's process group and the stop asked of it."""

    def __init__(self, proc: subprocess.Popen[bytes], grace: float) -> None:
        self.proc = proc
        self.pgid = proc.pid
        self.grace = grace
        self.reason: str | None = None
        self.kill_at: float | None = None
        #: Seconds between the SIGTERM and the SIGKILL (the grace it was given).
        self.kill_after = grace
        self.killed = False
        self._lock = threading.Lock()

    def terminate(self, reason: str, grace: float | None = None) -> None:
        """SIGTERM to the group now, SIGKILL once ``grace`` has passed (see
        :meth:`escalate`); the first reason given is the one reported."""
        with self._lock:
            if self.kill_at is not None:
                return
            self.reason = reason
            self.kill_after = self.grace if grace is None else grace
            self.kill_at = time.monotonic() + self.kill_after
        _signal_group(self.pgid, signal.SIGTERM)

    def escalate(self) -> None:
        """SIGKILL the group if its grace after SIGTERM has run out."""
        with self._lock:
            due = self.kill_at is not None and not self.killed and time.monotonic() >= self.kill_at
            self.killed = self.killed or due
        if due:
            _signal_group(self.pgid, signal.SIGKILL)

    def alive(self) -> bool:
        """True while a process of the group runs (zombies do not count)."""
        self.proc.poll()
        return _group_alive(self.pgid)


def _signal_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signum)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    for proc in psutil.process_iter(["status"]):
        try:
            if proc.info["status"] != psutil.STATUS_ZOMBIE and os.getpgid(proc.pid) == pgid:
                return True
        except (ProcessLookupError, psutil.Error):
            continue
    return False


_running: set[_Group] = set()
_running_lock = threading.Lock()
#: The worker's ends of the guards' watch pipes that this process holds.
_watches: set[int] = set()


def _forget_in_child() -> None:
    """In a process forked from this one (a task's ``os.fork``, a
    ``multiprocessing`` child): close its copies of the watch pipes, which
    would keep each guard from seeing this process die, and forget the
    commands, which are not its own to stop."""
    global _running_lock
    for fd in list(_watches):
        with contextlib.suppress(OSError):
            os.close(fd)
    _watches.clear()
    _running.clear()
    _running_lock = threading.Lock()  # (another thread may have held it at the fork)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)


def _close_watch(fd: int) -> None:
    """Close this process's end of a guard's watch pipe."""
    with _running_lock:
        _watches.discard(fd)
        os.close(fd)


def groups_under(pid: int) -> list[int]:
    """The process groups of the commands running under process ``pid``, at
    any depth: each command leads a session of its own, and no other process
    a worker starts does."""
    try:
        descendants = psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return []
    groups = []
    for proc in descendants:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if os.getpgid(proc.pid) == proc.pid:
                groups.append(proc.pid)
    return groups


def stop_groups_under(pid: int | None) -> list[int]:
    """SIGTERM the process group of every command running under ``pid`` and
    return those groups, for :func:`end_groups`: before a worker kills a
    child process that runs commands, which would leave them running. None
    (a process not started yet): none."""
    if pid is None:
        return []
    groups = groups_under(pid)
    for pgid in groups:
        _signal_group(pgid, signal.SIGTERM)
    return groups


def end_groups(pgids: Sequence[int], grace: float = DEFAULT_GRACE) -> None:
    """SIGKILL what is left of the groups ``pgids`` ``grace`` seconds after
    their SIGTERM; return once they are gone."""
    deadline = time.monotonic() + grace
    while any(map(_group_alive, pgids)) and time.monotonic() < deadline:
        time.sleep(_POLL)
    for pgid in pgids:
        _signal_group(pgid, signal.SIGKILL)
    while any(map(_group_alive, pgids)):
        time.sleep(_POLL)


def terminate_all(grace: float | None = None) -> None:
    """Stop every command running in this process: SIGTERM to each group,
    SIGKILL to what is left after ``grace`` seconds (None: each command's
    own grace). Returns once the groups are gone."""
    with _running_lock:
        groups = list(_running)
    for group in groups:
        group.terminate("as the worker stopped", grace)
    for group in groups:
        while group.alive():
            group.escalate()
            time.sleep(_POLL)


def _supervise(group: _Group, timeout: float | None) -> None:
    """Wait for the command's leader, applying the timeout and a requested
    stop; then stop whatever of the group is left, and wait until it is gone."""
    started = time.monotonic()
    while group.proc.poll() is None:
        if timeout is not None and time.monotonic() - started >= timeout:
            group.terminate(f"after timeout {timeout:g} s")
        group.escalate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            group.proc.wait(_POLL)
    if group.alive():
        group.terminate(_LEFTOVER)
        while group.alive():
            group.escalate()
            time.sleep(_POLL)


# -- running -------------------------------------------------------------------------


def run(spec: CommandSpec, ctx: JobContext | None = None) -> dict[str, Any]:
    """Run ``spec`` to the end and return its result, or raise :class:`CommandFailed`.

    ``ctx`` (the job's context) gets the output through ``log_output`` and
    the kill through ``on_cancel``, when it has them."""
    sink: Sink | None = getattr(ctx, "log_output", None)
    started = time.monotonic()
    proc, watch = _start(spec, getattr(ctx, "lease", None))
    group = _Group(proc, spec.grace)
    with _running_lock:
        _running.add(group)
    tails = {"stdout": Tail(spec.output_cap), "stderr": Tail(spec.output_cap)}
    readers = [
        threading.Thread(target=_pump, args=(stream, name, tails[name], sink), daemon=True)
        for name, stream in (("stdout", proc.stdout), ("stderr", proc.stderr))
        if stream is not None
    ]
    for reader in readers:
        reader.start()
    try:
        on_cancel = getattr(ctx, "on_cancel", None)
        if on_cancel is not None:
            on_cancel(lambda: group.terminate("as the job was cancelled"))
        _supervise(group, spec.timeout)
    finally:
        with _running_lock:
            _running.discard(group)
        _close_watch(watch)  # (a guard still running then stops its group)
    ended = time.monotonic()  # the command's duration: its group is gone
    # a process that left the group (setsid) may hold a pipe: give the readers
    # the grace, all together, then leave them to it
    deadline = ended + spec.grace + 1.0
    for reader in readers:
        reader.join(max(0.0, deadline - time.monotonic()))
    return _outcome(spec, group, tails, ended - started)


def _start(spec: CommandSpec, lease: float | None) -> tuple[subprocess.Popen[bytes], int]:
    """Start ``spec`` under its guard (:mod:`rota._command_guard`), the leader
    of a new session: the process, and the pipe end whose closing (this
    process's end, whatever ends it) stops the group, within the job's
    ``lease`` (seconds; None: no lease) as well as its grace. Raises
    :class:`CommandFailed` when the command cannot start."""
    command = ["/bin/sh", "-c", spec.argv[0]] if spec.shell else list(spec.argv)
    env = os.environ | dict(spec.env) if spec.env else None
    with _running_lock:  # (a fork from here on closes the child's copy)
        watch_read, watch = os.pipe()
        _watches.add(watch)
    status_read, status = os.pipe()
    try:
        proc = subprocess.Popen(
            guarded(command, watch_read, status, spec.grace, lease),
            cwd=spec.cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            pass_fds=(watch_read, status),
        )
    except OSError as exc:
        _close_watch(watch)
        os.close(status_read)
        raise CommandFailed(f"cannot start {spec.line()}: {_start_error(spec, exc)}") from None
    finally:
        os.close(watch_read)
        os.close(status)
    with os.fdopen(status_read, "rb") as reply:
        said = reply.read()
    if said != b"ok":  # the guard could not start the command (or died first)
        _close_watch(watch)
        _, stderr = proc.communicate()
        raise CommandFailed(
            f"cannot start {spec.line()}: {_start_error(spec, _guard_error(said, stderr))}"
        )
    return proc, watch


def guarded(
    command: Sequence[str], watch: int, status: int, grace: float, lease: float | None = None
) -> list[str]:
    """The command line that runs ``command`` under its guard, which stops
    the group once the pipe end ``watch`` reaches its end (``grace`` seconds
    between SIGTERM and SIGKILL, but no more than half the job's ``lease``
    when it has one) and reports its start on the pipe ``status``."""
    limits = [repr(grace), repr(float("inf") if lease is None else float(lease))]
    return [sys.executable, "-I", "-S", GUARD, str(watch), str(status), *limits, *command]


def _guard_error(said: bytes, stderr: bytes) -> OSError:
    """Why the guard could not start a command: what it wrote on its status
    pipe (errno, file and message, one per line), else its last line of stderr."""
    errno, filename, message = [*said.decode(errors="replace").split("\n", 2), "", ""][:3]
    if not message:  # the guard's own failure
        message = (stderr.decode(errors="replace").strip().splitlines() or ["no reason"])[-1]
    exc = OSError(int(errno) if errno.isdigit() else 0, message)
    exc.filename = filename or None
    return exc


def _start_error(spec: CommandSpec, exc: OSError) -> str:
    """Why the command could not start, naming the missing directory or program."""
    if spec.cwd is not None and not os.path.isdir(spec.cwd):
        return f"its working directory {spec.cwd!r} does not exist"
    if exc.filename is not None:
        return f"{exc.strerror or exc}: {exc.filename!r}"
    return str(exc.strerror or exc)


def _outcome(
    spec: CommandSpec, group: _Group, tails: dict[str, Tail], seconds: float
) -> dict[str, Any]:
    code = group.proc.returncode
    if code in spec.ok_codes and group.reason in (None, _LEFTOVER):
        return {
            "exit_code": code,
            "duration": round(seconds, 3),
            "stdout": tails["stdout"].text(),
            "stderr": tails["stderr"].text(),
            "truncated": {name: tail.truncated for name, tail in tails.items()},
        }
    what = f"was killed by {_signal_name(-code)}" if code < 0 else f"exited with code {code}"
    if group.reason is not None and group.reason != _LEFTOVER:
        what += f" {group.reason}" + _killed(group)
    message = f"command {_short(spec.line())} {what}"
    lines = tails["stderr"].text().rstrip().splitlines()[-_STDERR_LINES:]
    if lines:  # the last one first, on the line a worker's log shows
        message += f": {lines[-1][:_LAST_LINE_CHARS]}\nlast lines of stderr:\n"
        message += "\n".join(lines)[-_STDERR_CHARS:]
    raise CommandFailed(message)


def _killed(group: _Group) -> str:
    """What a stopped group's SIGKILL hit, if one was sent: the command
    itself, or processes it left in its group (the command having ended on
    the SIGTERM, or exited)."""
    if not group.killed:
        return ""
    if group.proc.returncode == -signal.SIGKILL:
        return f" (still running {group.kill_after:g} s after its SIGTERM)"
    return f"; processes it left in its group got SIGKILL {group.kill_after:g} s after the SIGTERM"


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _short(line: str) -> str:
    """A command line as a message quotes it: whole (its first 77
    characters and ``...`` past 80), between quotes it does not hold."""
    shown = line if len(line) <= 80 else line[:77] + "..."
    quote = next((q for q in ('"', "'") if q not in shown), "`")
    return f"{quote}{shown}{quote}"


# -- tasks ---------------------------------------------------------------------------

SpecOf = Callable[[tuple[Any, ...], dict[str, Any]], CommandSpec]


class CommandTask(Task[..., dict[str, Any]]):
    """A task whose jobs run a command. Sending checks the call as the worker
    will (a bad call raises :class:`InvalidArgument` and nothing is sent)."""

    def __init__(self, name: str, options: TaskOptions, app: App | None, spec_of: SpecOf) -> None:
        def run_job(*args: Any, **kwargs: Any) -> dict[str, Any]:
            return run(spec_of(args, kwargs), current_job())

        run_job.__doc__ = f"Run the command of task {name}."
        super().__init__(run_job, name, options, app)
        self.spec_of = spec_of

    def options(self, **overrides: Any) -> CommandTask:
        """A copy with per-call task option overrides (queue, priority, retries...)."""
        return CommandTask(self.name, self.opts.merged(**overrides), self._app, self.spec_of)

    def new_job(
        self,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        *,
        delay: float = 0.0,
        run_at: float | None = None,
        job_id: str | None = None,
    ) -> NewJob:
        """Check the call, then encode it as :meth:`Task.new_job` does."""
        self.spec_of(args, kwargs)
        return super().new_job(args, kwargs, delay=delay, run_at=run_at, job_id=job_id)


def is_fixed_command(task: object) -> bool:
    """True for a task of :meth:`rota.App.command`, whose calls take only
    ``extra_args`` (words appended to its argv); False for ``rota.cmd`` and
    for other tasks."""
    return isinstance(task, CommandTask) and task.spec_of is not _builtin_spec


def _builtin_spec(args: tuple[Any, ...], kwargs: dict[str, Any]) -> CommandSpec:
    """``rota.cmd(argv, cwd=, env=, shell=, timeout=, ok_codes=, output_cap=, grace=)``."""
    if len(args) != 1 or "argv" in kwargs:
        raise InvalidArgument(f"{COMMAND_TASK} takes one argument, the command line: argv")
    unknown = set(kwargs) - set(CommandSpec.__dataclass_fields__)
    if unknown:
        raise InvalidArgument(f"{COMMAND_TASK} got unknown option(s): {', '.join(sorted(unknown))}")
    return CommandSpec.build(args[0], **kwargs)


def _fixed_spec(spec: CommandSpec) -> SpecOf:
    def spec_of(args: tuple[Any, ...], kwargs: dict[str, Any]) -> CommandSpec:
        if args or set(kwargs) - {"extra_args"}:
            raise InvalidArgument(
                "a command task takes only extra_args=[...] (arguments appended to its argv)"
            )
        return spec.extended(extra_args(kwargs.get("extra_args")))

    return spec_of


def command_call(
    argv: list[str], timeout: float | None = None, **options: Any
) -> tuple[list[Any], dict[str, Any]]:
    """The arguments of a ``rota.cmd`` job running ``argv`` (no shell),
    stopped after ``timeout`` seconds when given, with the other options of
    :class:`CommandSpec` given and not None (``cwd``, ``env``,
    ``ok_codes``); read back by :func:`command_line_of` and
    :func:`command_options_of`."""
    given = {"timeout": timeout, **options}
    return [argv], {name: value for name, value in given.items() if value is not None}


def command_line(schedule: Schedule) -> str:
    """The command line a schedule of ``rota.cmd`` runs (shell-quoted), else ``""``."""
    if schedule.task != COMMAND_TASK:
        return ""
    call: Any = _json.loads(schedule.payload)
    return command_line_of(schedule.task, call.get("args") or [] if isinstance(call, dict) else [])


def command_line_of(task: str, args: Sequence[Any]) -> str:
    """The command line a job of ``task`` with ``args`` runs (its argv
    shell-quoted, or its shell line): ``""`` unless ``task`` is ``rota.cmd``."""
    if task != COMMAND_TASK:
        return ""
    argv = args[0] if args else None
    if isinstance(argv, list) and all(isinstance(word, str) for word in argv):
        return shlex.join(argv)
    return argv if isinstance(argv, str) else ""


def command_options_of(task: str, kwargs: object) -> str:
    """The options of a ``rota.cmd`` call beside its command line, as one
    line (``timeout 300 s, ok codes 0 2, cwd /srv, env A B``; the names of the
    environment variables only, whose values may be secrets): ``""`` for a
    call without any, or of another task. Stored values it cannot read are
    shown as they are."""
    if task != COMMAND_TASK or not isinstance(kwargs, dict):
        return ""

    def seconds(value: object) -> str:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return f"{value:g} s"
        return repr(value)

    def words(value: object) -> str:
        return " ".join(map(str, value)) if isinstance(value, list | dict) else repr(value)

    shown: dict[str, Callable[[Any], str]] = {
        "shell": lambda v: "through /bin/sh" if v is True else "",
        "timeout": lambda v: f"timeout {seconds(v)}",
        "grace": lambda v: f"grace {seconds(v)}",
        "ok_codes": lambda v: f"ok codes {words(v)}",
        "cwd": lambda v: f"cwd {v}",
        "env": lambda v: f"env {words(sorted(v) if isinstance(v, dict) else v)}",
        "output_cap": lambda v: f"output cap {v} bytes",
    }
    parts = [say(kwargs[key]) for key, say in shown.items() if kwargs.get(key) is not None]
    return ", ".join(part for part in parts if part)


def shown_kwargs(task: str, kwargs: Any) -> Any:
    """The keyword arguments of a call of ``task`` as a display shows them:
    for ``rota.cmd``, each value of ``env`` replaced by :data:`HIDDEN` and
    the names kept, since the values may be secrets (a stored ``env`` that
    is not a dict is hidden whole); else ``kwargs`` as they are. ``kwargs``
    itself is left as it is."""
    if task != COMMAND_TASK or not isinstance(kwargs, dict) or kwargs.get("env") is None:
        return kwargs
    env = kwargs["env"]
    return kwargs | {"env": dict.fromkeys(env, HIDDEN) if isinstance(env, dict) else HIDDEN}


def parse_command_line(text: str) -> list[str]:
    """The argv of a command line typed as in a shell (quotes kept together,
    no shell run), checked as :meth:`CommandSpec.build` checks it."""
    try:
        argv = shlex.split(text)
    except ValueError as exc:
        raise InvalidArgument(f"command line {text!r} cannot be split: {exc}") from None
    CommandSpec.build(argv)
    return argv


def task_to_send(app: App, name: str) -> Task[Any, Any]:
    """``app``'s task ``name``, to send or schedule a job of. For ``rota.cmd``:
    the app's own where it runs command lines (``App(commands=True)``,
    ``rota worker --commands``), else one left out of ``app.tasks``, so that
    sending one (from the dashboard of ``rota run``, say) never makes a
    worker of this app run them."""
    if name != COMMAND_TASK:
        return app.get_task(name)
    task = app.tasks.get(COMMAND_TASK)
    if isinstance(task, CommandTask):
        return task
    return CommandTask(COMMAND_TASK, TaskOptions.build(), app, _builtin_spec)


def refuse_reserved(name: str) -> None:
    """Refuse (:class:`InvalidArgument`) ``name`` for a task of the user's
    when it is :data:`COMMAND_TASK`: a worker that had such a task would
    claim command-line jobs without ``--commands`` and fail them."""
    if name == COMMAND_TASK:
        raise InvalidArgument(
            f"the task name {COMMAND_TASK!r} is reserved for the built-in task that runs "
            "the command lines it is sent (App(commands=True), rota worker --commands); "
            "give this task another name"
        )


def register(app: App, name: str, spec: CommandSpec | None, options: dict[str, Any]) -> CommandTask:
    """Add a command task to ``app``: ``spec`` fixed (``app.command``, under
    any name but the reserved :data:`COMMAND_TASK`), or None for the built-in
    task that runs the command line it is sent."""
    task_name = _validate.name(name, "task name")
    if spec is not None:
        refuse_reserved(task_name)
    if task_name in app.tasks:
        raise InvalidArgument(f"a task named {task_name!r} is already registered")
    spec_of = _builtin_spec if spec is None else _fixed_spec(spec)
    task = CommandTask(task_name, TaskOptions.build(**options), app, spec_of)
    app.tasks[task_name] = task
    return task
