"""Real ``rota`` processes for tests, always stopped at teardown."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import psutil

ROTA = str(Path(sys.executable).with_name("rota"))


class Processes:
    """Starts ``rota`` subcommands and kills whatever is left at teardown."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self.started: list[subprocess.Popen[bytes]] = []

    def rota(self, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        """Start ``rota ARGS...``; its output goes to a log file in tmp_path."""
        return self.command(ROTA, *args, env=env)

    def command(self, *argv: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        """Start any program (``argv``) the same way, in a session of its own."""
        log = open(self.tmp_path / f"proc-{len(self.started)}.log", "wb")  # noqa: SIM115
        proc = subprocess.Popen(
            list(argv),
            stdout=log,
            stderr=subprocess.STDOUT,
            env=os.environ | (env or {}),
            start_new_session=True,
        )
        log.close()
        self.started.append(proc)
        return proc

    def output(self, proc: subprocess.Popen[bytes]) -> str:
        """What a started process has printed so far."""
        index = self.started.index(proc)
        return (self.tmp_path / f"proc-{index}.log").read_text(errors="replace")

    def kill_while(
        self, proc: subprocess.Popen[bytes], condition: Callable[[], object], timeout: float = 10.0
    ) -> None:
        """SIGKILL ``proc``'s process group at a moment ``condition()`` holds.

        The group is frozen (SIGSTOP) before each look, so what the condition
        saw is still true when the kill lands; otherwise it runs on a moment.
        """
        deadline = time.monotonic() + timeout
        while True:
            os.killpg(proc.pid, signal.SIGSTOP)
            if condition():
                os.killpg(proc.pid, signal.SIGKILL)
                os.killpg(proc.pid, signal.SIGCONT)
                proc.wait(10)
                return
            os.killpg(proc.pid, signal.SIGCONT)
            if time.monotonic() >= deadline:
                raise AssertionError(f"timed out after {timeout} s waiting for {condition}")
            time.sleep(0.005)

    def stop_all(self) -> None:
        for proc in self.started:
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGCONT)
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.wait(10)


#: Processes a command's process tree (``apps/forker.py``) starts, itself included.
TREE_SIZE = 7


def tree_started(path: Path) -> bool:
    """Whether the process tree writing its pids to ``path`` runs whole."""
    pids = pids_in(path)
    return len(pids) == TREE_SIZE and all(map(alive, pids))


def pids_in(path: Path) -> list[int]:
    """The pids a command's process tree (``apps/forker.py``) wrote to ``path``."""
    return [int(line) for line in path.read_text().split()] if path.exists() else []


def alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie, dead but not yet reaped, does not)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
