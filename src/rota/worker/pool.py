"""``rota worker APP --processes N``: a supervisor of N full worker processes.

Each child is a complete ``rota worker`` (its own worker id, slots, claims
and heartbeat), forked from the supervisor and running the same command
line without ``--processes``. The supervisor has by then only parsed its
command line: it never loads the app, touches the store or starts a thread,
so a child inherits no connection, lock or thread half-held, and loads the
app itself. Forking skips a new interpreter's start and rota's imports in
every child (a pool's first job starts about 0.18 s sooner, as soon as a
single worker's), and the children share the pages of the modules already
loaded (docs/performance.md).

Children run in their own session, so a Ctrl-C in the terminal reaches the
supervisor only, which forwards one SIGTERM to each child. A child takes any
further SIGTERM or SIGINT as the same request: a service manager may signal
every process of the service at once (systemd's stop does) while the
supervisor forwards its own. A second signal to the supervisor kills the
children at once (the leases of their running jobs then expire, and another
worker recovers them). On Linux each child is asked to receive SIGKILL when
the supervisor dies, so a killed supervisor leaves no orphans.

A child that exits while the pool is running is logged (exit code or
signal) and restarted after a delay that doubles with each quick crash
(from ``RESTART_DELAY`` up to ``RESTART_DELAY_CAP``); a child that ran for
``STABLE_AFTER`` seconds starts the count again.

On SIGTERM/SIGINT the children drain within ``grace`` (each releases what
it could not finish); a child still alive ``KILL_MARGIN`` seconds after that
is killed, with the commands under it, and the supervisor then exits with
status 1. A child stopping commands (each gets its own ``grace`` after
SIGTERM, which only the app knows) has the margin from the last time the
supervisor saw them, looking every ``_LOOK_EVERY`` seconds once the grace
is over. A signal during
start-up ends it: no child is started after it, and the ones started drain.
"""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NoReturn

from rota._signals import StopSignals
from rota.commands import end_groups, groups_under

__all__ = ["POOL_CHILD", "WorkerPool", "child_argv"]

log = logging.getLogger("rota.worker.pool")

RESTART_DELAY = 0.5
RESTART_DELAY_CAP = 30.0
STABLE_AFTER = 10.0
KILL_MARGIN = 5.0
#: How often a stopping pool looks for commands under its children, after the grace.
_LOOK_EVERY = 0.25
_PR_SET_PDEATHSIG = 1
#: The environment variable that marks a pool's child (its index): its
#: worker takes a second signal as the first, since the supervisor escalates.
POOL_CHILD = "ROTA_POOL_CHILD"


def child_argv(argv: Sequence[str]) -> list[str]:
    """``argv`` (a ``rota`` command line, without the program) less its
    ``--processes`` option: the command line of one child."""
    out: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--processes":
            skip = True
        elif not arg.startswith("--processes="):
            out.append(arg)
    return out


def _die_with_parent(parent: int) -> None:
    """Ask Linux to kill this process when its parent dies; exit at once if
    the parent (pid ``parent``) is already gone."""
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:
        os._exit(1)


def _child_main(argv: Sequence[str], index: int, parent: int) -> NoReturn:
    """A forked child's life: a session of its own, the default signal
    handlers back, then ``rota`` with ``argv``. It ends as any worker
    process does, by the interpreter's exit (the app's ``atexit`` handlers
    run): click's :class:`SystemExit`, or an error's traceback, unwinds the
    supervisor's frames the child inherited, none of which catches it."""
    os.setsid()
    _die_with_parent(parent)
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, signal.SIG_DFL)
    os.environ[POOL_CHILD] = str(index)
    from rota.cli import main

    main(args=list(argv), prog_name="rota")
    sys.exit(0)  # (click's standalone main never returns)


class _Process:
    """A forked child, polled and signalled by pid."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        """The exit status (minus the signal number if killed by one), or
        None while it runs."""
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self) -> int:
        """Wait for the child to end; its exit status as :meth:`poll`."""
        if self.returncode is None:
            _, status = os.waitpid(self.pid, 0)
            self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def send_signal(self, signum: int) -> None:
        """Send ``signum``, unless the child was already reaped."""
        if self.returncode is None:
            os.kill(self.pid, signum)

    def kill(self) -> None:
        """SIGKILL."""
        self.send_signal(signal.SIGKILL)


@dataclass
class _Child:
    index: int
    proc: _Process | None = None
    started: float = 0.0
    crashes: int = 0
    restart_at: float | None = field(default=None)


class WorkerPool:
    """Starts, restarts and drains ``processes`` child workers.

    ``argv`` is the child's ``rota`` command line (see :func:`child_argv`);
    ``grace`` the children's own drain time.
    """

    def __init__(self, argv: Sequence[str], processes: int, grace: float) -> None:
        self.argv = list(argv)
        self.grace = grace
        self._children = [_Child(i) for i in range(processes)]
        self._signals = StopSignals()

    def run(self) -> int:
        """Supervise until SIGTERM/SIGINT; return the exit status (1 if any
        child had to be killed)."""
        self._signals.install()
        for child in self._children:
            if self._signals.is_set():  # (each start takes a while: a fork and its pages)
                break
            self._start(child)
        while not self._signals.is_set():
            self._reap_and_restart()
            self._signals.wait(0.1)
        return self._drain()

    def pids(self) -> list[int]:
        """Process ids of the running children."""
        return [c.proc.pid for c in self._children if c.proc and c.proc.poll() is None]

    def _start(self, child: _Child) -> None:
        sys.stdout.flush()  # (or the child would write the parent's buffered text again)
        sys.stderr.flush()
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child (measured by the integration tests)
            _child_main(self.argv, child.index, parent)
        child.proc = _Process(pid)
        child.started = time.monotonic()
        child.restart_at = None
        log.info("child %d started (pid %d)", child.index, child.proc.pid)

    def _reap_and_restart(self) -> None:
        now = time.monotonic()
        for child in self._children:
            if child.restart_at is not None:
                if now >= child.restart_at and not self._signals.is_set():
                    self._start(child)
                continue
            assert child.proc is not None
            code = child.proc.poll()
            if code is None:
                continue
            how = f"signal {-code}" if code < 0 else f"exit code {code}"
            child.crashes = 0 if now - child.started >= STABLE_AFTER else child.crashes + 1
            delay = min(RESTART_DELAY_CAP, RESTART_DELAY * 2 ** max(0, child.crashes - 1))
            log.warning(
                "child %d (pid %d) ended with %s; restarting in %.1f s",
                child.index,
                child.proc.pid,
                how,
                delay,
            )
            child.restart_at = now + delay

    def _drain(self) -> int:
        now = time.monotonic()
        deadline = now + self.grace + KILL_MARGIN
        next_look = now + self.grace  # for children stopping commands
        running = [c.proc for c in self._children if c.restart_at is None and c.proc]
        log.info("stopping %d child(ren) (grace %g s)", len(running), self.grace)
        for proc in running:
            proc.send_signal(signal.SIGTERM)
        waited_for: set[int] = set()
        while any(p.poll() is None for p in running):
            if self._signals.received > 1:
                log.warning(
                    "second signal: killing the children; their running jobs' leases will expire"
                )
                break
            now = time.monotonic()
            if now >= next_look:
                # a child stopping commands waits out their grace, which only
                # the app knows: it has the margin from the last look that
                # found them, to release its jobs once they are gone
                next_look = now + _LOOK_EVERY
                for proc in running:
                    if proc.poll() is None and groups_under(proc.pid):
                        deadline = max(deadline, now + KILL_MARGIN)
                        if proc.pid not in waited_for:
                            waited_for.add(proc.pid)
                            log.info("child pid %d is stopping its commands: waiting", proc.pid)
            if now >= deadline:
                break
            self._signals.wait(0.05)
        killed = [p for p in running if p.poll() is None]
        for proc in killed:
            if self._signals.received == 1:
                log.error("child pid %d still running after grace: killing it", proc.pid)
            end_groups(groups_under(proc.pid), grace=0)  # no command outlives its worker
            proc.kill()
        for proc in running:
            proc.wait()
        return 1 if killed else 0


def pool_main(argv: Sequence[str], processes: int, grace: float) -> None:
    """Run a pool for the CLI and exit with its status."""
    sys.exit(WorkerPool(child_argv(argv), processes, grace).run())
