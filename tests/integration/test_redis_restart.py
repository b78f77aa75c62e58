"""Redis restarts under real workers: a private ``redis-server`` with
``--appendonly yes --appendfsync always`` is killed mid-run and started again
on the same port and data directory.

Workers and producers reconnect on their own, each worker logs the outage
once, and nothing that was acknowledged is lost: every job whose ``send``
returned, before, during or after the outage, ends succeeded.
"""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from helpers import appended_lines, wait_for
from procs import Processes
from rota import App
from rota.models import JobState
from rota.stores import Store, open_store

redis = pytest.importorskip("redis")

REDIS_SERVER = shutil.which("redis-server")
BEFORE = 3_000
DURING = 40  # batches of 25 sent by a producer thread across the restart


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class DurableRedis:
    """A private ``redis-server`` that fsyncs its append-only file on every write."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = workdir / "redis.log"

    def start(self) -> None:
        assert REDIS_SERVER is not None
        args = [
            REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--dir",
            str(self.workdir), "--appendonly", "yes", "--appendfsync", "always", "--save", "",
            "--logfile", str(self.log),
        ]  # fmt: skip
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        client = redis.Redis(port=self.port, socket_connect_timeout=0.2)

        def loaded() -> bool:
            try:
                return bool(client.info("persistence")["loading"] == 0)
            except (redis.ConnectionError, redis.BusyLoadingError):
                return False

        wait_for(loaded, timeout=20, what="redis-server to load its data")
        client.close()

    def crash(self) -> None:
        """SIGKILL: no shutdown save; only what was fsynced survives."""
        if self.proc is not None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)
            self.proc = None

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self.proc = None


@pytest.fixture
def durable_redis(tmp_path: Path) -> Iterator[DurableRedis]:
    if REDIS_SERVER is None:
        pytest.skip("redis-server is not installed")
    data = tmp_path / "redis-data"
    data.mkdir()
    server = DurableRedis(data)
    server.start()
    yield server
    server.stop()


def producer_app(url: str) -> App:
    app = App(url)
    app.task(name="record")(lambda i, pause=0.0: i)
    return app


def executions(log: Path) -> Counter[str]:
    return Counter(line.split()[0] for line in appended_lines(log))


def succeeded(store: Store) -> int:
    counts = {q.name: q.counts for q in store.queues()}.get("default", {})
    return counts.get(JobState.SUCCEEDED, 0)


@pytest.mark.slow
def test_workers_ride_out_a_redis_restart_and_nothing_acknowledged_is_lost(
    durable_redis: DurableRedis,
    processes: Processes,
    app_path: Callable[[str], str],
    tmp_path: Path,
) -> None:
    started = time.monotonic()
    url = f"redis://127.0.0.1:{durable_redis.port}/0?namespace=restart"
    log = tmp_path / "executions.log"
    app = producer_app(url)
    acknowledged = [h.id for h in app.tasks["record"].send_many(
        [{"i": i, "pause": 0.005} for i in range(BEFORE)]
    )]  # fmt: skip
    env = {"ROTA_TEST_LOG": str(log), "ROTA_TEST_LEASE": "5"}
    args = ("worker", app_path("counting"), "--url", url, "--concurrency", "4")
    workers = [processes.rota(*args, env=env) for _ in range(2)]
    wait_for(lambda: len(appended_lines(log)) >= 300, 60, 0.05, "work")

    # a producer keeps sending through the outage; what send_many returned is acknowledged
    during: list[str] = []
    failures: list[BaseException] = []

    def produce() -> None:
        try:
            for batch in range(DURING):
                calls = [{"i": BEFORE + batch * 25 + j} for j in range(25)]
                during.extend(h.id for h in app.tasks["record"].send_many(calls))
                time.sleep(0.05)
        except BaseException as exc:  # reported below
            failures.append(exc)

    producer = threading.Thread(target=produce, daemon=True)
    producer.start()
    wait_for(lambda: len(during) >= 100, 30, 0.01, "the producer to get going")
    durable_redis.crash()
    time.sleep(1.5)  # the outage: every client is cut off meanwhile
    durable_redis.start()
    producer.join(60)
    assert not producer.is_alive()
    assert not failures, failures
    acknowledged += during
    assert len(during) == DURING * 25

    store = open_store(url)
    try:
        wait_for(
            lambda: succeeded(store) == len(acknowledged), 90, 0.25, "every acknowledged job done"
        )
        jobs = store.get_jobs(acknowledged)
        assert all(j is not None and j.state is JobState.SUCCEEDED for j in jobs)
        runs = executions(log)
        assert set(runs) == set(acknowledged)
        # only jobs in flight when Redis went down can have run twice
        assert sum(n - 1 for n in runs.values()) <= 2 * 4
    finally:
        store.close()
        app.close()

    for worker in workers:
        assert worker.poll() is None, processes.output(worker)
        out = processes.output(worker)
        assert out.count("lost the connection to Redis") == 1, out
        assert out.count("reconnected to Redis") == 1, out
    assert time.monotonic() - started < 120
