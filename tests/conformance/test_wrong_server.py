"""A store URL whose host and port reach a server of another kind (a
PostgreSQL URL on MariaDB's or Redis's port, a MySQL URL on PostgreSQL's or
Redis's) fails at once with an error that says so, and that trying again
cannot change (:class:`StoreError`, not :class:`StoreUnavailable`): a
worker started on it exits with status 1 rather than wait for it. A server
that says nothing it can be told by stays an outage, as before."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest

from backends import MYSQL_URL, POSTGRES_URL, REDIS_URL
from rota.errors import StoreError, StoreUnavailable
from rota.stores import open_store, server_protocol


def _address(url: str, port: int) -> tuple[str, int]:
    parts = urlsplit(url)
    return parts.hostname or "127.0.0.1", parts.port or port


PG = _address(POSTGRES_URL, 5432)
MY = _address(MYSQL_URL, 3306)
REDIS = _address(REDIS_URL, 6379)


def _listening(address: tuple[str, int]) -> bool:
    try:
        socket.create_connection(address, timeout=1).close()
    except OSError:
        return False
    return True


def _needs(*addresses: tuple[str, int]) -> None:
    for host, port in addresses:
        if not _listening((host, port)):
            pytest.skip(f"no server listens on {host}:{port}")


@pytest.fixture
def silent() -> Iterator[tuple[str, int]]:
    """A TCP server that accepts connections and never says a word."""
    server = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.1)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[:2]
    finally:
        stop.set()
        thread.join()
        for conn in held:
            conn.close()
        server.close()


def test_the_protocol_of_each_server_is_told_by_one_short_exchange(
    silent: tuple[str, int],
) -> None:
    _needs(PG, MY, REDIS)
    assert server_protocol(*PG) == "PostgreSQL"
    assert server_protocol(*MY) == "MySQL"
    assert server_protocol(*REDIS) == "Redis"
    assert server_protocol(*silent) is None


@pytest.mark.parametrize("sslmode", ["prefer", "disable"])
def test_a_postgresql_url_on_a_mysql_port_fails_at_once_saying_so(sslmode: str) -> None:
    pytest.importorskip("psycopg")
    _needs(MY)
    started = time.monotonic()
    with pytest.raises(StoreError) as caught:
        open_store(f"postgresql://postgres@{MY[0]}:{MY[1]}/db?sslmode={sslmode}")
    assert not isinstance(caught.value, StoreUnavailable)
    assert (
        f"the server at {MY[0]}:{MY[1]} does not speak the PostgreSQL protocol (it answers as "
        "a MySQL server)"
    ) in str(caught.value)
    assert time.monotonic() - started < 5


def test_a_postgresql_url_on_a_redis_port_fails_saying_so() -> None:
    pytest.importorskip("psycopg")
    _needs(REDIS)
    with pytest.raises(StoreError) as caught:
        open_store(f"postgresql://postgres@{REDIS[0]}:{REDIS[1]}/db?connect_timeout=2")
    assert not isinstance(caught.value, StoreUnavailable)
    assert "does not speak the PostgreSQL protocol (it answers as a Redis server)" in str(
        caught.value
    )


@pytest.mark.parametrize(("address", "kind"), [(PG, "PostgreSQL"), (REDIS, "Redis")])
def test_a_mysql_url_on_another_servers_port_fails_saying_so(
    address: tuple[str, int], kind: str
) -> None:
    pytest.importorskip("MySQLdb")
    _needs(address)
    with pytest.raises(StoreError) as caught:
        open_store(f"mysql://root@{address[0]}:{address[1]}/db")
    assert not isinstance(caught.value, StoreUnavailable)
    assert (
        f"the server at {address[0]}:{address[1]} does not speak the MySQL protocol (it answers "
        f"as a {kind} server)"
    ) in str(caught.value)


def test_a_silent_server_is_still_an_outage(silent: tuple[str, int]) -> None:
    """Silence is what a server too busy to answer gives too: not told apart."""
    pytest.importorskip("psycopg")
    host, port = silent
    with pytest.raises(StoreUnavailable):
        open_store(f"postgresql://postgres@{host}:{port}/db?connect_timeout=1")


def test_a_worker_on_a_url_of_the_wrong_kind_of_server_exits_with_status_1() -> None:
    pytest.importorskip("psycopg")
    _needs(MY)
    env = {k: v for k, v in os.environ.items() if k != "ROTA_URL"}
    url = f"postgresql://postgres@{MY[0]}:{MY[1]}/db"
    rota = [sys.executable, "-c", "from rota.cli import main; main()"]
    done = subprocess.run(
        [*rota, "worker", "--commands", "--url", url],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert done.returncode == 1, done.stderr
    assert "does not speak the PostgreSQL protocol" in done.stderr
