"""``rota worker APP --processes N``: a supervisor of N full worker processes.

Each child is a complete ``rota worker`` (its own worker id, slots, claims
and heartbeat), started as a fresh interpreter running the same
command line without ``--processes``. A fresh interpreter, not a bare fork:
the parent may already hold threads, store connections and locks, which a
fork would copy half-held; a new process loads the app cleanly, and the
supervisor itself stays small (it never loads the app or touches the store).

Children run in their own session, so a Ctrl-C in the terminal reaches the
supervisor only, which forwards one SIGTERM to each child (a second signal
is forwarded too: the children then exit at once). On Linux each child is
asked to receive SIGKILL when the supervisor dies, so a killed supervisor
leaves no orphans.

A child that exits while the pool is running is logged (exit code or
signal) and restarted after a delay that doubles with each quick crash
(from ``RESTART_DELAY`` up to ``RESTART_DELAY_CAP``); a child that ran for
``STABLE_AFTER`` seconds starts the count again.

On SIGTERM/SIGINT the children drain within ``grace`` (each releases what
it could not finish); a child still alive ``KILL_MARGIN`` seconds after that
is killed, and the supervisor then exits with status 1.
"""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import FrameType

__all__ = ["WorkerPool", "child_argv"]

log = logging.getLogger("rota.worker.pool")

RESTART_DELAY = 0.5
RESTART_DELAY_CAP = 30.0
STABLE_AFTER = 10.0
KILL_MARGIN = 5.0
_PR_SET_PDEATHSIG = 1


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


def _die_with_parent() -> None:  # pragma: no cover - runs in the child before exec
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass


@dataclass
class _Child:
    index: int
    proc: subprocess.Popen[bytes] | None = None
    started: float = 0.0
    crashes: int = 0
    restart_at: float | None = field(default=None)


class WorkerPool:
    """Starts, restarts and drains ``processes`` child workers.

    ``argv`` is the child's ``rota`` command line (see :func:`child_argv`);
    ``grace`` the children's own drain time.
    """

    def __init__(self, argv: Sequence[str], processes: int, grace: float) -> None:
        self.argv = [sys.executable, "-c", "from rota.cli import main; main()", *argv]
        self.grace = grace
        self._children = [_Child(i) for i in range(processes)]
        self._signals = 0
        self._wake = threading.Event()

    def run(self) -> int:
        """Supervise until SIGTERM/SIGINT; return the exit status (1 if any
        child had to be killed)."""
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)
        for child in self._children:
            self._start(child)
        while not self._signals:
            self._reap_and_restart()
            self._wake.wait(0.1)
        return self._drain()

    def pids(self) -> list[int]:
        """Process ids of the running children."""
        return [c.proc.pid for c in self._children if c.proc and c.proc.poll() is None]

    def _start(self, child: _Child) -> None:
        env = os.environ | {"ROTA_POOL_CHILD": str(child.index)}
        preexec = _die_with_parent if sys.platform.startswith("linux") else None
        child.proc = subprocess.Popen(
            self.argv, env=env, start_new_session=True, preexec_fn=preexec
        )
        child.started = time.monotonic()
        child.restart_at = None
        log.info("child %d started (pid %d)", child.index, child.proc.pid)

    def _reap_and_restart(self) -> None:
        now = time.monotonic()
        for child in self._children:
            if child.restart_at is not None:
                if now >= child.restart_at and not self._signals:
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
        log.info("stopping %d child(ren) (grace %.0f s)", len(self._children), self.grace)
        deadline = time.monotonic() + self.grace + KILL_MARGIN
        running = [c.proc for c in self._children if c.restart_at is None and c.proc]
        forwarded = 0
        while any(p.poll() is None for p in running) and time.monotonic() < deadline:
            while forwarded < self._signals:
                forwarded += 1
                for proc in running:
                    if proc.poll() is None:
                        proc.send_signal(signal.SIGTERM)
            self._wake.wait(0.05)
            self._wake.clear()
        killed = [p for p in running if p.poll() is None]
        for proc in killed:
            log.error("child pid %d still running after grace: killing it", proc.pid)
            proc.kill()
        for proc in running:
            proc.wait()
        return 1 if killed else 0

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self._signals += 1
        self._wake.set()


def pool_main(argv: Sequence[str], processes: int, grace: float) -> None:
    """Run a pool for the CLI and exit with its status."""
    sys.exit(WorkerPool(child_argv(argv), processes, grace).run())
