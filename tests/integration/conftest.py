"""Fixtures that run real ``rota`` processes and always stop them."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

APPS = Path(__file__).parent / "apps"
ROTA = str(Path(sys.executable).with_name("rota"))


class Processes:
    """Starts ``rota`` subcommands and kills whatever is left at teardown."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self.started: list[subprocess.Popen[bytes]] = []

    def rota(self, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        """Start ``rota ARGS...``; its output goes to a log file in tmp_path."""
        log = open(self.tmp_path / f"proc-{len(self.started)}.log", "wb")  # noqa: SIM115
        proc = subprocess.Popen(
            [ROTA, *args],
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

    def stop_all(self) -> None:
        for proc in self.started:
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGCONT)
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.wait(10)


@pytest.fixture
def processes(tmp_path: Path) -> Iterator[Processes]:
    """Start real rota processes; every one is killed at teardown, pass or fail."""
    procs = Processes(tmp_path)
    yield procs
    procs.stop_all()


@pytest.fixture
def app_path() -> Callable[[str], str]:
    """``app_path("counting")`` → the ``path.py:app`` spec of a test app."""
    return lambda name: f"{APPS / name}.py:app"
