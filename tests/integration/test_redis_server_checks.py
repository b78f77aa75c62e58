"""The Redis store checks its server on first use: an evicting
``maxmemory-policy`` is refused unless the URL allows it, and a server
without persistence is logged once (at warning level)."""

from __future__ import annotations

import logging
import subprocess
import urllib.request
from pathlib import Path

import pytest

from conformance.support import new_job
from helpers import wait_for
from integration.redis_servers import PrivateRedis, free_port, private_redis
from procs import ROTA, Processes
from rota.errors import InvalidArgument, StoreError
from rota.stores import open_store

__all__ = ["private_redis"]  # fixture

WARNING = "keeps no append-only file and no RDB snapshots"


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if WARNING in r.getMessage()]


@pytest.mark.parametrize("policy", ["allkeys-lru", "volatile-ttl"])
@pytest.mark.parametrize("config", ["CONFIG", "no CONFIG"])
def test_an_evicting_server_is_refused_unless_allowed(
    private_redis: type[PrivateRedis], policy: str, config: str
) -> None:
    args = ["--maxmemory-policy", policy]
    if config == "no CONFIG":  # as managed services do: the check reads INFO
        args += ["--rename-command", "CONFIG", ""]
    server = private_redis(*args)
    refused = open_store(f"redis://{server.address}/0?namespace=checks")
    try:
        calls = [lambda: refused.enqueue([new_job(1)]), refused.now]
        for call in calls:  # refused on every call, not only the first
            with pytest.raises(StoreError) as caught:
                call()
            assert f"maxmemory-policy {policy}" in str(caught.value)
            assert "allow_eviction=1" in str(caught.value)
    finally:
        refused.close()
    allowed = open_store(f"redis://{server.address}/0?namespace=checks&allow_eviction=1")
    try:
        assert allowed.now() > 0
        assert allowed.queues() == []  # the refused send wrote nothing
    finally:
        allowed.close()


def test_allow_eviction_takes_a_flag(private_redis: type[PrivateRedis]) -> None:
    with pytest.raises(InvalidArgument, match="allow_eviction must be 1 or 0"):
        open_store("redis://127.0.0.1:1/0?allow_eviction=maybe")


def test_a_server_without_persistence_is_logged_once(
    private_redis: type[PrivateRedis], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="rota.stores.redis")
    server = private_redis()
    for _ in range(2):
        store = open_store(f"redis://{server.address}/0")
        try:
            store.now()
            store.now()
        finally:
            store.close()
    logged = _warnings(caplog)
    assert len(logged) == 1
    assert server.address in logged[0]
    assert all(r.levelno == logging.WARNING for r in caplog.records)


@pytest.mark.parametrize("persistence", [["--appendonly", "yes"], ["--save", "3600 1"]])
def test_a_server_with_persistence_is_not_warned_about(
    private_redis: type[PrivateRedis], caplog: pytest.LogCaptureFixture, persistence: list[str]
) -> None:
    caplog.set_level(logging.WARNING, logger="rota.stores.redis")
    server = private_redis(*persistence)
    store = open_store(f"redis://{server.address}/0")
    try:
        assert store.now() > 0
    finally:
        store.close()
    assert _warnings(caplog) == []


def test_one_shot_commands_leave_the_warning_to_long_running_ones(
    private_redis: type[PrivateRedis], processes: Processes, tmp_path: Path
) -> None:
    server = private_redis()
    url = f"redis://{server.address}/0"
    listed = subprocess.run(
        [ROTA, "--url", url, "jobs", "list"], capture_output=True, text=True, timeout=60
    )
    assert listed.returncode == 0, listed.stderr
    assert "no jobs match" in listed.stderr
    assert WARNING not in listed.stderr
    (tmp_path / "tasks.py").write_text("from rota import App\napp = App()\n")
    scheduler = processes.rota("--url", url, "scheduler", str(tmp_path / "tasks.py"))
    wait_for(lambda: WARNING in processes.output(scheduler), timeout=30)
    port = free_port()
    web = processes.rota("--url", url, "web", "--port", str(port))
    wait_for(lambda: _answers(f"http://127.0.0.1:{port}/api/queues"), timeout=30)
    wait_for(lambda: WARNING in processes.output(web), timeout=10)


def test_a_worker_pool_warns_once(
    private_redis: type[PrivateRedis], processes: Processes, tmp_path: Path
) -> None:
    """Each child of ``rota worker --processes 3`` uses the store; the first
    one logs the server's missing persistence for all of them."""
    server = private_redis()
    url = f"redis://{server.address}/0"
    (tmp_path / "tasks.py").write_text("from rota import App\napp = App()\n")
    pool = processes.rota("--url", url, "worker", str(tmp_path / "tasks.py"), "--processes", "3")
    store = open_store(url)
    try:
        wait_for(lambda: len(store.workers()) == 3, timeout=30, what="the three children")
    finally:
        store.close()
    wait_for(lambda: WARNING in processes.output(pool), timeout=10)
    assert processes.output(pool).count(WARNING) == 1, processes.output(pool)


def _answers(address: str) -> bool:
    try:
        with urllib.request.urlopen(address, timeout=5) as answer:
            return bool(answer.status == 200)
    except OSError:
        return False
