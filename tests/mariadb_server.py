"""Private MariaDB servers for tests that crash and restart one: each has
its own data directory, socket and port under a temporary directory, so the
machine's own server (3306) is never touched.

``MariaDB.create(parent)`` runs ``mariadb-install-db`` and starts the
server; ``crash()`` kills it with SIGKILL and ``start()`` brings it back on
the same data. Run as root, the server runs as the ``mysql`` user. Tests
stop every server they start through the ``mariadb_server`` fixture.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

SERVER = Path("/usr/sbin/mariadbd")
INSTALL = shutil.which("mariadb-install-db") or "/usr/bin/mariadb-install-db"
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class MariaDB:
    """One private MariaDB server (see the module docstring)."""

    def __init__(
        self, root: Path, port: int, options: tuple[str, ...] = ("--skip-log-bin",)
    ) -> None:
        self.root = root
        self.data = root / "data"
        self.port = port
        self.log = root / "error.log"
        #: Server options beyond where it keeps its files.
        self.options = options
        self._proc: subprocess.Popen[bytes] | None = None

    @classmethod
    def create(
        cls,
        parent: Path,
        name: str = "mariadb",
        options: tuple[str, ...] = ("--skip-log-bin",),
    ) -> MariaDB:
        """A new server, initialised and started with ``options``."""
        if not SERVER.exists():
            message = f"MariaDB server binary not found at {SERVER}"
            if IN_CI:
                pytest.fail(message + " (CI=true: must not skip)")
            pytest.skip(message)
        root = parent / name
        root.mkdir()
        if os.geteuid() == 0:
            shutil.chown(root, "mysql", "mysql")
        server = cls(root, _free_port(), options)
        done = subprocess.run(
            [INSTALL, "--no-defaults", f"--datadir={server.data}", *server._user(),
             "--auth-root-authentication-method=normal", "--skip-test-db"],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"mariadb-install-db failed: {done.stdout}{done.stderr}")
        server.start()
        return server

    def url(self, database: str) -> str:
        """A store URL of this server."""
        return f"mysql://root@127.0.0.1:{self.port}/{database}"

    def start(self, timeout: float = 60.0) -> None:
        """Start the server and wait until it accepts connections."""
        self._proc = subprocess.Popen(
            [str(SERVER), "--no-defaults", f"--datadir={self.data}", *self._user(),
             f"--port={self.port}", "--bind-address=127.0.0.1",
             f"--socket={self.root / 'server.sock'}", f"--pid-file={self.root / 'server.pid'}",
             f"--log-error={self.log}", "--innodb-buffer-pool-size=32M", *self.options],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + timeout
        while not self._answers():
            if self._proc.poll() is not None or time.monotonic() > deadline:
                log = self.log.read_text() if self.log.exists() else ""
                raise RuntimeError(f"MariaDB on port {self.port} never came up:\n{log}")
            time.sleep(0.05)

    def replica(self) -> MariaDB:
        """A replica of this server (started with ``--log-bin --server-id=1``),
        started read-only and replicating everything this server writes from
        now on."""
        file, position = self.sql("SHOW MASTER STATUS")[0][:2]
        replica = MariaDB.create(
            self.root.parent, "mariadb-replica", ("--skip-log-bin", "--server-id=2", "--read-only")
        )
        replica.sql(
            f"CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT={self.port}, "
            f"MASTER_USER='root', MASTER_PASSWORD='', MASTER_LOG_FILE='{file}', "
            f"MASTER_LOG_POS={position}, MASTER_USE_GTID=no"
        )
        replica.sql("START SLAVE")
        return replica

    def sql(self, statement: str) -> list[tuple[object, ...]]:
        """Run one statement as root; its rows."""
        import MySQLdb

        conn = MySQLdb.connect(host="127.0.0.1", port=self.port, user="root", autocommit=True)
        try:
            cursor = conn.cursor()
            cursor.execute(statement)
            return list(cursor.fetchall())
        finally:
            conn.close()

    def crash(self) -> None:
        """Kill the server with SIGKILL, as a crash would, and wait for it."""
        if self._proc is not None and self._proc.poll() is None:
            self._proc.send_signal(signal.SIGKILL)
            self._proc.wait(30)

    def _answers(self) -> bool:
        ping = subprocess.run(
            ["mariadb-admin", "-h", "127.0.0.1", "-P", str(self.port), "-u", "root", "ping"],
            capture_output=True, check=False,
        )  # fmt: skip
        return ping.returncode == 0

    @staticmethod
    def _user() -> list[str]:
        return ["--user=mysql"] if os.geteuid() == 0 else []


@pytest.fixture
def mariadb_server() -> Iterator[MariaDB]:
    """A private MariaDB server for one test, killed and removed afterwards."""
    parent = Path(tempfile.mkdtemp(prefix="rota-mariadb-"))
    parent.chmod(0o755)
    server: MariaDB | None = None
    try:
        server = MariaDB.create(parent)
        yield server
    finally:
        if server is not None:
            server.crash()
        shutil.rmtree(parent, ignore_errors=True)


@pytest.fixture
def mariadb_replicated() -> Iterator[tuple[MariaDB, MariaDB]]:
    """A private primary MariaDB server and its replica, for one test, both
    killed and removed afterwards."""
    parent = Path(tempfile.mkdtemp(prefix="rota-mariadb-"))
    parent.chmod(0o755)
    started: list[MariaDB] = []
    try:
        primary = MariaDB.create(parent, options=("--log-bin", "--server-id=1"))
        started.append(primary)
        started.append(primary.replica())
        yield primary, started[1]
    finally:
        for server in started:
            server.crash()
        shutil.rmtree(parent, ignore_errors=True)
