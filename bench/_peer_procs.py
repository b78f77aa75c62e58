"""What the benchmarks share: child processes that are always stopped, rota's
modules compiled as an installed package's are, and a virtualenv per peer
under ``bench/.peers-venv/`` (never part of rota's environment)."""

from __future__ import annotations

import compileall
import contextlib
import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

VENVS = Path(__file__).resolve().parent / ".peers-venv"
STOP_WAIT = 15.0  # seconds a process gets after SIGTERM before SIGKILL
PIP_TIMEOUT = 1200.0

_live: list[subprocess.Popen[bytes]] = []


class BenchError(Exception):
    """A measurement that could not be made; the system's cell says why."""


def spawn(argv: list[str], **kwargs: Any) -> subprocess.Popen[bytes]:
    """A child in its own process group, stopped by :func:`stop` (or by
    :func:`stop_all`)."""
    proc = subprocess.Popen(argv, start_new_session=True, **kwargs)
    _live.append(proc)
    return proc


def stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the child's process group; SIGKILL if it outlives STOP_WAIT."""
    for sig, wait in ((signal.SIGTERM, STOP_WAIT), (signal.SIGKILL, 10.0)):
        if proc.poll() is not None:
            break
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(wait)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)  # children left behind by the leader
    if proc in _live:
        _live.remove(proc)


def stop_all() -> None:
    """Stop every child still running."""
    for proc in list(_live):
        stop(proc)


def stop_on_signals() -> None:
    """Turn SIGTERM, SIGHUP and SIGINT into SystemExit, so that ``finally``
    blocks stop every child."""

    def interrupted(signum: int, frame: object) -> None:
        raise SystemExit(f"interrupted by signal {signum}")

    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, interrupted)


def ensure_venv(name: str, packages: Sequence[str]) -> None:
    """Make ``bench/.peers-venv/NAME`` with ``packages`` unless it is there."""
    if not packages:
        return
    path = VENVS / name
    marker = path / "bench-requirements.txt"
    wanted = "\n".join(packages) + "\n"
    if marker.exists() and marker.read_text() == wanted:
        return
    print(f"installing {' '.join(packages)} into {path}", flush=True)
    if not (path / "bin" / "python").exists():
        subprocess.run([sys.executable, "-m", "venv", str(path)], check=True, timeout=300)
    pip = [str(path / "bin" / "python"), "-m", "pip", "install", "-q", *packages]
    subprocess.run(pip, check=True, timeout=PIP_TIMEOUT)
    marker.write_text(wanted)


def compile_rota() -> None:
    """Write the bytecode of rota's modules, as installing a package does.

    pip compiles the packages it installs (each peer's among them), but an
    editable install of rota leaves its modules to be compiled at their first
    import, which writes nothing where ``PYTHONDONTWRITEBYTECODE`` is set:
    every worker would then compile rota's source as it starts (0.05-0.1 s
    of a pool's start on a 2-core machine), which no installed copy does."""
    spec = importlib.util.find_spec("rota")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("rota is not importable: run this with rota's environment")
    for folder in spec.submodule_search_locations:
        if not compileall.compile_dir(folder, quiet=1):
            raise SystemExit(f"rota's modules under {folder} do not compile")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def redis_server(start_timeout: float = 10.0) -> Iterator[str]:
    """A private redis-server (no persistence) on a free port for the block;
    yields its URL."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise SystemExit("redis-server is not installed (apt-get install redis-server)")
    port = free_port()
    argv = [binary, "--port", str(port), "--save", "", "--appendonly", "no"]
    proc = spawn([*argv, "--daemonize", "no"], stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + start_timeout
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
                break
            if time.monotonic() > deadline or proc.poll() is not None:
                raise BenchError(f"redis-server on port {port} did not start")
            time.sleep(0.02)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        stop(proc)
