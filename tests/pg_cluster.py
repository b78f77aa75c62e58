"""Private PostgreSQL clusters for tests that stop, restart or replicate a
server: each has its own data directory and port under the test's temporary
directory, so the machine's own server is never touched.

``PgCluster.create(tmp_path)`` runs ``initdb`` and starts the server;
``replica()`` makes a streaming replica with ``pg_basebackup -R``. Run as
root, the server runs as the ``postgres`` user (PostgreSQL refuses root).
Tests stop every cluster they start through the ``pg_cluster`` fixture.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

BIN = Path(os.environ.get("ROTA_TEST_PG_BIN", "/usr/lib/postgresql/15/bin"))
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _as_postgres(cmd: list[str]) -> list[str]:
    """``cmd`` run as the postgres user when this process is root."""
    if os.geteuid() == 0:
        return ["runuser", "-u", "postgres", "--", *cmd]
    return cmd


def _give_to_postgres(path: Path) -> None:
    if os.geteuid() == 0:
        shutil.chown(path, "postgres", "postgres")


class PgCluster:
    """One private PostgreSQL server (see the module docstring)."""

    def __init__(self, root: Path, port: int) -> None:
        self.root = root
        self.data = root / "data"
        self.port = port
        self.log = root / "server.log"

    @classmethod
    def create(cls, parent: Path, name: str = "primary") -> PgCluster:
        """A new cluster, initialised and started."""
        if not (BIN / "initdb").exists():
            message = f"PostgreSQL server binaries not found in {BIN}"
            if IN_CI:
                pytest.fail(message + " (CI=true: must not skip)")
            pytest.skip(message)
        root = parent / f"pg-{name}"
        root.mkdir()
        _give_to_postgres(root)
        cluster = cls(root, _free_port())
        cluster._run([str(BIN / "initdb"), "-D", str(cluster.data), "-U", "postgres",
                      "--auth=trust", "-N", "-E", "UTF8"])  # fmt: skip
        # fsync off spares the disk but keeps every commit a crash (an immediate
        # stop) may not lose: synchronous_commit stays on, so an acknowledged
        # commit is in the WAL that the restarted server replays.
        with open(cluster.data / "postgresql.conf", "a") as conf:
            conf.write(
                "\nfsync = off\nfull_page_writes = off\n"
                "wal_level = replica\nmax_wal_senders = 4\nhot_standby = on\n"
                "max_connections = 200\n"
            )
        cluster.start()
        return cluster

    def url(self, database: str = "postgres") -> str:
        """A libpq URL of this server."""
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def start(self) -> None:
        """Start the server and wait until it accepts connections."""
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1"
        self._run([str(BIN / "pg_ctl"), "-D", str(self.data), "-l", str(self.log),
                   "-o", options, "-w", "-t", "60", "start"])  # fmt: skip

    def stop(self, mode: str = "fast") -> None:
        """Stop the server (``mode``: smart, fast or immediate); a stopped one is left so."""
        if (self.data / "postmaster.pid").exists():
            self._run([str(BIN / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop"],
                      check=False)  # fmt: skip

    def restart(self, mode: str = "immediate") -> None:
        """Stop the server with ``mode`` (immediate: as a crash would) and start it again."""
        self.stop(mode)
        self.start()

    def replica(self, name: str = "replica") -> PgCluster:
        """A streaming replica of this server (``pg_basebackup -R``), started,
        hot standby: it serves reads and refuses writes."""
        root = self.root.parent / f"pg-{name}"
        root.mkdir()
        _give_to_postgres(root)
        replica = PgCluster(root, _free_port())
        self._run([str(BIN / "pg_basebackup"), "-h", "127.0.0.1", "-p", str(self.port),
                   "-U", "postgres", "-D", str(replica.data), "-R", "-X", "stream"])  # fmt: skip
        replica.start()
        return replica

    def psql(self, sql: str, database: str = "postgres") -> str:
        """Run ``sql`` with psql as the postgres user; its output."""
        cmd = ["psql", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres",
               "-d", database, "-Atc", sql]  # fmt: skip
        done = subprocess.run(
            cmd,
            capture_output=True,
            text=True,
            check=True,
        )
        return done.stdout.strip()

    def wait_ready(self, timeout: float = 30.0) -> None:
        """Return once the server accepts connections (bounded by ``timeout``)."""
        deadline = time.monotonic() + timeout
        while True:
            ready = subprocess.run(
                [str(BIN / "pg_isready"), "-h", "127.0.0.1", "-p", str(self.port), "-q"],
                check=False,
            )
            if ready.returncode == 0:
                return
            assert time.monotonic() < deadline, f"PostgreSQL on port {self.port} never came up"
            time.sleep(0.05)

    def _run(self, cmd: list[str], check: bool = True) -> None:
        done = subprocess.run(_as_postgres(cmd), capture_output=True, text=True, check=False)
        if check and done.returncode != 0:
            log = self.log.read_text() if self.log.exists() else ""
            raise RuntimeError(
                f"{' '.join(cmd)} failed ({done.returncode}): {done.stderr}{done.stdout}\n{log}"
            )


@pytest.fixture
def pg_cluster() -> Iterator[PgCluster]:
    """A private PostgreSQL server for one test, stopped and removed afterwards
    with every replica made from it. Its folder is outside pytest's private
    temporary folders, which the postgres user cannot enter."""
    parent = Path(tempfile.mkdtemp(prefix="rota-pg-"))
    parent.chmod(0o755)
    try:
        yield PgCluster.create(parent)
    finally:
        for other in sorted(parent.glob("pg-*")):
            PgCluster(other, 0).stop("immediate")
        shutil.rmtree(parent, ignore_errors=True)
