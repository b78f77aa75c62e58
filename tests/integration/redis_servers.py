"""Redis servers a test owns (``redis-server`` on a free port, stalled and
resumed at will, stopped at teardown) and a TCP proxy in front of one that the test can make hold or
cut replies."""

from __future__ import annotations

import contextlib
import shutil
import signal
import socket
import subprocess
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from backends import IN_CI
from helpers import wait_for

redis = pytest.importorskip("redis")

REDIS_SERVER = shutil.which("redis-server")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class PrivateRedis:
    """A ``redis-server`` of this test, without persistence unless ``args`` say;
    run under ``launcher`` (a command and its options, e.g. valgrind's) if given."""

    def __init__(self, workdir: Path, *args: str, launcher: Sequence[str] = ()) -> None:
        self.workdir = workdir
        self.args = ["--save", "", "--appendonly", "no", *args]
        self.launcher = list(launcher)
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> None:
        if REDIS_SERVER is None:
            if IN_CI:
                pytest.fail("redis-server is not installed (CI=true: must not skip)")
            pytest.skip("redis-server is not installed")
        argv = [*self.launcher, REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1"]
        argv += ["--dir", str(self.workdir), *self.args]
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        client = redis.Redis(port=self.port, socket_connect_timeout=0.2, password=self._password())

        def ready() -> bool:
            assert self.proc is not None and self.proc.poll() is None, "redis-server exited"
            try:
                return bool(client.ping())
            except (redis.ConnectionError, redis.BusyLoadingError):
                return False

        wait_for(ready, timeout=20, what="redis-server to answer")
        client.close()

    def _password(self) -> str | None:
        if "--requirepass" in self.args:
            return self.args[self.args.index("--requirepass") + 1]
        return None

    def pause(self) -> None:
        """SIGSTOP: the server stalls; connections are still accepted (by the
        kernel) and requests wait unread until :meth:`resume`."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        """SIGCONT: the server runs again, first what it was sent meanwhile."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGCONT)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self.proc = None


@pytest.fixture
def private_redis(tmp_path: Path) -> Iterator[type[PrivateRedis]]:
    """``private_redis(*args, launcher=())`` starts a redis-server; all are
    stopped at teardown."""
    started: list[PrivateRedis] = []

    class Started(PrivateRedis):
        def __init__(self, *args: str, launcher: Sequence[str] = ()) -> None:
            workdir = tmp_path / f"redis-{len(started)}"
            workdir.mkdir()
            super().__init__(workdir, *args, launcher=launcher)
            started.append(self)
            self.start()

    yield Started
    for server in started:
        server.stop()


class Proxy:
    """Forwards TCP connections from a local port to ``target``. ``hold``
    makes it stop passing replies; ``cut_next_wait_reply`` makes it close the
    first connection whose last command was a BLPOP when that command's reply
    arrives, instead of forwarding the reply."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.listener.getsockname()[1])
        self.hold = threading.Event()
        self.cut_armed = threading.Event()
        self.cut_done = threading.Event()
        self.waiting = threading.Event()  # a BLPOP went through
        self._socks: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        self._closed = False
        self._spawn(self._accept)

    def _spawn(self, target: object, *args: object) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)  # type: ignore[arg-type]
        self._threads.append(thread)
        thread.start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.target_port))
            self._socks += [client, upstream]
            state = {"blocking": False}
            self._spawn(self._requests, client, upstream, state)
            self._spawn(self._replies, upstream, client, state)

    def _requests(self, src: socket.socket, dst: socket.socket, state: dict[str, bool]) -> None:
        while data := self._recv(src):
            state["blocking"] = b"\r\n$5\r\nBLPOP\r\n" in data[:24]  # the command's name
            if state["blocking"]:
                self.waiting.set()
            if not self._send(dst, data):
                break
        self._close(src, dst)

    def _replies(self, src: socket.socket, dst: socket.socket, state: dict[str, bool]) -> None:
        while data := self._recv(src):
            if state["blocking"] and self.cut_armed.is_set() and not self.cut_done.is_set():
                self.cut_done.set()
                break  # the reply is dropped with the connection
            if self.hold.is_set():
                continue  # swallowed: the client never gets an answer
            if not self._send(dst, data):
                break
        self._close(src, dst)

    @staticmethod
    def _recv(sock: socket.socket) -> bytes:
        try:
            return sock.recv(65536)
        except OSError:
            return b""

    @staticmethod
    def _send(sock: socket.socket, data: bytes) -> bool:
        try:
            sock.sendall(data)
        except OSError:
            return False
        return True

    @staticmethod
    def _close(*socks: socket.socket) -> None:
        for sock in socks:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def close(self) -> None:
        self._closed = True
        self._close(self.listener)
        self._close(*self._socks)
        for thread in self._threads:
            thread.join(5)


@pytest.fixture
def proxy_to() -> Iterator[type[Proxy]]:
    """``proxy_to(port)`` starts a proxy; all are closed at teardown."""
    made: list[Proxy] = []

    class Made(Proxy):
        def __init__(self, target_port: int) -> None:
            super().__init__(target_port)
            made.append(self)

    yield Made
    for proxy in made:
        proxy.close()
