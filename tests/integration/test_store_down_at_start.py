"""A worker or a scheduler started before its store (a machine's boot, a
compose file) waits for it, saying so, and starts once it answers; a stop
signal ends the wait at once; a store that answers with a refusal (an
unknown role) ends the start at once."""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from backends import IN_CI, POSTGRES_URL, postgres_reachable
from helpers import wait_for
from integration.redis_servers import PrivateRedis, free_port, private_redis
from pg_cluster import PgCluster, pg_cluster
from procs import Processes
from rota import App
from rota.models import JobState

__all__ = ["pg_cluster", "private_redis"]  # fixtures

WAITING = "trying again in"


@pytest.fixture
def unstarted_redis(tmp_path: Path) -> Iterator[PrivateRedis]:
    """A redis-server of this test, not started yet; stopped at teardown."""
    workdir = tmp_path / "redis"
    workdir.mkdir()
    server = PrivateRedis(workdir)
    yield server
    server.stop()


def _succeeded(app: App, queue: str = "default") -> int:
    counts = {q.name: q.counts for q in app.store.queues()}.get(queue, {})
    return counts.get(JobState.SUCCEEDED, 0)


def _started_late(
    url: str, start_store: Callable[[], None], processes: Processes, app_path: Callable[[str], str]
) -> None:
    """Start a worker and a scheduler on ``url`` while its store is down (their
    app defines its schedule as it loads), see both wait, start the store,
    and see both do their work."""
    worker = processes.rota("worker", app_path("defining"), "--url", url)
    scheduler = processes.rota("scheduler", app_path("defining"), "--url", url)
    for proc in (worker, scheduler):
        # tries after 1 s, 2 s, 4 s..., each logged (a Redis call's own
        # retry_for does not stretch the first one to 30 s)
        wait_for(lambda p=proc: processes.output(p).count(WAITING) >= 3, 30, 0.05, "three tries")
        assert proc.poll() is None, processes.output(proc)

    start_store()
    app = App(url)
    app.task(name="record")(lambda i: i)
    try:
        app.tasks["record"].send(1)
        # both try again at most 4 s after the store is up (pauses 1, 2, 4 s:
        # it starts within the first few), then work
        wait_for(lambda: _succeeded(app) >= 3, 60, 0.1, "the sent job and two fires to run")
    finally:
        app.close()
    for proc in (worker, scheduler):
        assert "the store answers after" in processes.output(proc)
        assert proc.poll() is None


@pytest.mark.slow
def test_a_worker_and_a_scheduler_started_before_redis_wait_for_it(
    unstarted_redis: PrivateRedis,
    processes: Processes,
    app_path: Callable[[str], str],
) -> None:
    url = f"redis://{unstarted_redis.address}/0?namespace=late"  # retry_for: 30 s a call
    _started_late(url, unstarted_redis.start, processes, app_path)


@pytest.mark.slow
def test_a_worker_and_a_scheduler_started_before_postgresql_wait_for_it(
    pg_cluster: PgCluster,
    processes: Processes,
    app_path: Callable[[str], str],
) -> None:
    pg_cluster.stop()
    _started_late(pg_cluster.url(), pg_cluster.start, processes, app_path)


def _nothing_listens(kind: str) -> str:
    port = free_port()
    return {
        "redis": f"redis://127.0.0.1:{port}/0?namespace=never",  # retry_for 30 s a call
        "postgres": f"postgresql://postgres@127.0.0.1:{port}/postgres",
        "mysql": f"mysql://root@127.0.0.1:{port}/rota_never",
    }[kind]


@pytest.mark.parametrize("kind", ["redis", "postgres", "mysql"])
@pytest.mark.parametrize("command", ["worker", "scheduler"])
def test_a_stop_signal_ends_the_wait_for_the_store_at_once(
    kind: str, command: str, processes: Processes, app_path: Callable[[str], str]
) -> None:
    proc = processes.rota(command, app_path("counting"), "--url", _nothing_listens(kind))
    wait_for(lambda: WAITING in processes.output(proc), 30, 0.05, "a wait for the store")
    asked = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(10) == 0, processes.output(proc)
    assert time.monotonic() - asked < 3
    assert "stopped before" in processes.output(proc)


def _refusing(kind: str, tmp_path: Path, private_redis: type[PrivateRedis]) -> tuple[str, str]:
    """A URL of a store that answers with a refusal, and the words of it."""
    if kind == "sqlite":
        return f"sqlite:///{tmp_path}/no/such/dir/jobs.db", "cannot open SQLite database"
    if kind == "redis":
        server = private_redis("--requirepass", "the-right-one")
        return (
            f"redis://:a-wrong-one@{server.address}/0?namespace=refused",
            "refused the connection: invalid username-password pair",
        )
    if not postgres_reachable():
        if IN_CI:
            pytest.fail("PostgreSQL is not reachable (CI=true: must not skip)")
        pytest.skip("PostgreSQL is not reachable")
    server = urlsplit(POSTGRES_URL)
    url = f"postgresql://rota_no_such_role@{server.hostname}:{server.port or 5432}/postgres"
    return url, "refused the connection: connection failed: "


@pytest.mark.parametrize("app", ["counting", "defining"])
@pytest.mark.parametrize("kind", ["redis", "postgres", "sqlite"])
def test_a_store_that_refuses_ends_the_start_at_once(
    kind: str,
    app: str,
    processes: Processes,
    app_path: Callable[[str], str],
    tmp_path: Path,
    private_redis: type[PrivateRedis],
) -> None:
    """Also for a module that writes its schedules as it is imported: the
    store's refusal is the error, not an import that failed."""
    url, words = _refusing(kind, tmp_path, private_redis)
    proc = processes.rota("worker", app_path(app), "--url", url)
    try:
        code = proc.wait(15)
    except subprocess.TimeoutExpired:
        pytest.fail("the worker waited on a refusal: " + processes.output(proc))
    output = processes.output(proc)
    assert code == 1, output
    assert words in output
    assert WAITING not in output
    assert "a-wrong-one" not in output
    assert "importing" not in output
