"""rota on Redis against the Python task queues that run on Redis.

Each system gets a fresh private ``redis-server`` (no persistence) on a free
port, N no-op jobs sent with its fastest sending API, then one worker process
with its usual concurrent setup, timed from the worker's start until every
job is done (worker start-up included, the same for all). The peers must be
installed in the running interpreter's environment; missing ones are skipped:

    python -m venv /tmp/peers && /tmp/peers/bin/pip install -e . rq 'dramatiq[redis]' huey arq
    /tmp/peers/bin/python bench/redis_peers/peers.py --jobs 20000
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import redis

HERE = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent
CHUNK = 5_000


class Server:
    """A private redis-server without persistence."""

    def __init__(self) -> None:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = int(sock.getsockname()[1])
        self.url = f"redis://127.0.0.1:{self.port}/0"
        server = shutil.which("redis-server")
        if server is None:
            raise SystemExit("redis-server is not installed")
        self.proc = subprocess.Popen(
            [server, "--port", str(self.port), "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL,
        )
        client = redis.Redis(port=self.port)
        for _ in range(200):
            try:
                client.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.02)
        self.client = client

    def stop(self) -> None:
        self.client.close()
        self.proc.terminate()
        self.proc.wait(10)


def start(*args: str, env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [str(BIN / args[0]), *args[1:]],
        cwd=HERE,
        env=os.environ | {"PYTHONPATH": str(HERE)} | env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def until(done: Callable[[], bool], timeout: float = 600.0) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            raise SystemExit("timed out waiting for the jobs to finish")
        time.sleep(0.02)


def drain(proc: subprocess.Popen[bytes], done: Callable[[], bool], started: float) -> float:
    """Seconds from ``started`` until ``done()``; the worker is stopped either way."""
    try:
        until(done)
        return time.perf_counter() - started
    finally:
        if proc.poll() is None:
            proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def bench_rota(server: Server, n: int, concurrency: int) -> tuple[float, float]:
    from rota import App
    from rota.models import JobState

    url = f"{server.url}?namespace=bench"
    app = App(url)
    app.task(name="noop")(lambda i: i)
    started = time.perf_counter()
    for first in range(0, n, CHUNK):
        app.tasks["noop"].send_many([(i,) for i in range(first, min(n, first + CHUNK))])
    sent = time.perf_counter() - started
    started = time.perf_counter()
    proc = start(
        "rota", "worker", "tasks_rota.py:app", "--concurrency", str(concurrency),
        "--log-level", "warning", env={"ROTA_URL": url},
    )  # fmt: skip

    def done() -> bool:
        counts = {q.name: q.counts for q in app.store.queues()}.get("default", {})
        return counts.get(JobState.SUCCEEDED, 0) >= n

    took = drain(proc, done, started)
    app.close()
    return n / sent, n / took


def bench_rq(server: Server, n: int, concurrency: int) -> tuple[float, float]:
    import tasks_rq
    from rq import Queue

    queue = Queue("bench", connection=server.client)
    started = time.perf_counter()
    for first in range(0, n, CHUNK):
        queue.enqueue_many(
            [Queue.prepare_data(tasks_rq.noop, (i,)) for i in range(first, min(n, first + CHUNK))]
        )
    sent = time.perf_counter() - started
    started = time.perf_counter()
    # SimpleWorker runs jobs in the worker process: RQ's fastest single-process mode
    proc = start(
        "rq", "worker", "--burst", "--worker-class", "rq.worker.SimpleWorker", "--url",
        server.url, "--logging_level", "WARNING", "bench", env={},
    )  # fmt: skip
    took = drain(proc, lambda: proc.poll() is not None, started)  # burst: exits when done
    assert len(queue.finished_job_registry) >= n, "RQ did not finish every job"
    return n / sent, n / took


def bench_dramatiq(server: Server, n: int, concurrency: int) -> tuple[float, float]:
    os.environ["PEER_REDIS_URL"] = server.url
    import tasks_dramatiq

    started = time.perf_counter()
    for i in range(n):
        tasks_dramatiq.noop.send(i)
    sent = time.perf_counter() - started
    started = time.perf_counter()
    proc = start(
        "dramatiq", "tasks_dramatiq", "--processes", "1", "--threads", str(concurrency),
        env={"PEER_REDIS_URL": server.url},
    )  # fmt: skip
    assert server.client.hlen("dramatiq:default.msgs") == n
    took = drain(proc, lambda: server.client.hlen("dramatiq:default.msgs") == 0, started)
    return n / sent, n / took


def bench_huey(server: Server, n: int, concurrency: int) -> tuple[float, float]:
    os.environ["PEER_REDIS_URL"] = server.url
    import tasks_huey

    started = time.perf_counter()
    for i in range(n):
        tasks_huey.noop(i)
    sent = time.perf_counter() - started
    started = time.perf_counter()
    proc = start(
        "huey_consumer", "tasks_huey.huey", "-w", str(concurrency), "-k", "thread",
        env={"PEER_REDIS_URL": server.url},
    )  # fmt: skip
    took = drain(proc, lambda: tasks_huey.huey.result_count() >= n, started)
    return n / sent, n / took


def bench_arq(server: Server, n: int, concurrency: int) -> tuple[float, float]:
    from arq import create_pool
    from arq.connections import RedisSettings

    async def send() -> None:
        pool = await create_pool(RedisSettings.from_dsn(server.url))
        for first in range(0, n, 1000):
            await asyncio.gather(
                *(pool.enqueue_job("noop", i) for i in range(first, min(n, first + 1000)))
            )
        await pool.aclose()

    started = time.perf_counter()
    asyncio.run(send())
    sent = time.perf_counter() - started
    started = time.perf_counter()
    proc = start(
        "arq",
        "tasks_arq.WorkerSettings",
        env={"PEER_REDIS_URL": server.url, "PEER_CONCURRENCY": str(concurrency)},
    )

    def results() -> int:
        return sum(1 for _ in server.client.scan_iter("arq:result:*", count=5000))

    # burst mode: the worker exits once the queue is empty
    took = drain(proc, lambda: proc.poll() is not None, started)
    assert results() >= n, f"arq finished {results()} of {n} jobs"
    return n / sent, n / took


SYSTEMS: dict[str, tuple[str, Callable[[Server, int, int], tuple[float, float]]]] = {
    "rota": ("rota", bench_rota),
    "rq": ("rq", bench_rq),
    "dramatiq": ("dramatiq", bench_dramatiq),
    "huey": ("huey", bench_huey),
    "arq": ("arq", bench_arq),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--systems", default=",".join(SYSTEMS))
    args = parser.parse_args()
    sys.path.insert(0, str(HERE))
    rows: list[tuple[str, Any, Any]] = []
    for name in args.systems.split(","):
        module, bench = SYSTEMS[name]
        if importlib.util.find_spec(module) is None:
            rows.append((name, "not installed", ""))
            continue
        server = Server()
        try:
            sent, drained = bench(server, args.jobs, args.concurrency)
        finally:
            server.stop()
        rows.append((name, f"{sent:,.0f}", f"{drained:,.0f}"))
        print(f"{name:10} send {sent:>10,.0f} jobs/s   drain {drained:>8,.0f} jobs/s", flush=True)
    print(f"\n{args.jobs:,} no-op jobs, one worker process, concurrency {args.concurrency}")
    print("| system | send (jobs/s) | drain (jobs/s) |\n|---|---:|---:|")
    for name, sent_rate, drain_rate in rows:
        print(f"| {name} | {sent_rate} | {drain_rate} |")


if __name__ == "__main__":
    main()
