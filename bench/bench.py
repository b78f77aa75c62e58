"""rota's benchmark: no-op throughput, bulk send rate, enqueue-to-start latency.

Runs a real ``rota worker`` process against a fresh store and reports the
median of several runs::

    python bench/bench.py --url sqlite:///tmp/bench.db --mode threads --concurrency 8
    python bench/bench.py --url redis://127.0.0.1:6379/0 --runs 5
    python bench/bench.py --url sqlite:///tmp/bench.db --processes 1,2   # pool vs one worker
    python bench/bench.py --mode processes --concurrency 2 --prefetch 0,2  # held jobs or none
    python bench/bench.py --url redis://127.0.0.1:6379/9 --body roundtrip  # jobs that do I/O
    python bench/bench.py --body compute --jobs 5000 --processes 1,2  # CPU-bound jobs

``drain_per_s`` is the whole drain from the worker's spawn, its start-up
counted; ``steady_per_s`` and ``cpu_us_per_job`` are over the jobs done after
the first 5 %, its start-up left out, and so is ``server_cpu_us_per_job`` on
Redis: the server's CPU per job (from ``INFO cpu``), which with the rate
tells how busy its one thread is. ``start_ms`` is the time from the worker's
spawn to the start of a job sent before it, and ``pss_mib`` the proportional
memory of its processes (a supervisor and its children share some pages)
once idle. ``--body roundtrip`` drains jobs that each make one Redis round
trip of their own (a pipelined ``INCR`` of a counter of the run's) instead
of no-op jobs: to the store's Redis server, or to ``BENCH_BODY_URL``
(default: the local Redis's database 9) on other stores. ``--body compute``
drains jobs that each run a loop of pure Python (``BENCH_COMPUTE_STEPS``
steps, 20,000 by default: about 1 ms on a small machine), which hold the
interpreter's lock throughout.

This is a benchmark, not a test: it asserts nothing and prints figures.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path

import psutil
from _peer_procs import compile_rota
from _stores import drop, fresh_url, redis_cpu_seconds

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
#: Extra flags for the worker (``--quiet`` from the command line).
WORKER_FLAGS: list[str] = []


@contextmanager
def worker(
    url: str, mode: str, concurrency: int, queue: str, flags: Sequence[str] = ()
) -> Iterator[psutil.Process]:
    """A real ``rota worker`` process (``--processes`` of them under a
    supervisor when ``flags`` ask for more than 1) for the duration of the block."""
    rota = Path(sys.executable).with_name("rota")
    cmd = [
        str(rota),
        "worker",
        str(HERE / "bench_app.py") + ":app",
        "--url",
        url,
        "--queues",
        queue,
        "--concurrency",
        str(concurrency),
        "--mode",
        mode,
        *flags,
        *WORKER_FLAGS,
    ]
    log = tempfile.TemporaryFile()  # noqa: SIM115 (closed below); the worker's log lines
    proc = subprocess.Popen(
        cmd, stdout=subprocess.DEVNULL, stderr=log, env=os.environ | {"ROTA_URL": url}
    )
    try:
        yield psutil.Process(proc.pid)
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def pss_mib(proc: psutil.Process) -> float:
    """The proportional set size of ``proc`` and its descendants, in MiB."""
    total = 0
    for p in (proc, *proc.children(recursive=True)):
        with suppress(psutil.NoSuchProcess):
            total += p.memory_full_info().pss
    return total / 2**20


def cpu_seconds(proc: psutil.Process) -> float:
    """User and system CPU time of ``proc`` and its children so far (the
    live children of a ``--processes`` pool included)."""
    times = proc.cpu_times()
    total = times.user + times.system + times.children_user + times.children_system
    for child in proc.children(recursive=True):
        try:
            child_times = child.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += child_times.user + child_times.system
    return total


def server_cpu_seconds(url: str) -> float | None:
    """CPU time the store's server has used so far: a Redis server's (None for
    the other stores: SQLite runs inside the worker, whose CPU is counted)."""
    if not url.startswith(("redis://", "rediss://")):
        return None
    return redis_cpu_seconds(url)


def wait_drained(
    app: object, queue: str, total: int, proc: psutil.Process, timeout: float = 600.0
) -> dict[str, float]:
    """Block until ``total`` jobs of ``queue`` succeeded (bounded); return the
    worker's CPU time per job in microseconds, its jobs per second and, on
    Redis, the server's CPU time per job (which this poll adds a little to),
    all over the jobs done after the first 5 % (its start-up excluded)."""
    from rota.models import JobState

    store = app.store  # type: ignore[attr-defined]
    url = app.url  # type: ignore[attr-defined]
    deadline = time.monotonic() + timeout
    first: tuple[int, float, float, float | None] | None = None
    while time.monotonic() < deadline:
        counts = {q.name: q.counts for q in store.queues()}.get(queue, {})
        done = counts.get(JobState.SUCCEEDED, 0)
        if first is None and done >= total // 20:
            first = (done, cpu_seconds(proc), time.perf_counter(), server_cpu_seconds(url))
        if done >= total:
            assert first is not None
            jobs = max(1, done - first[0])
            seconds = time.perf_counter() - first[2]
            figures = {
                "cpu_us_per_job": (cpu_seconds(proc) - first[1]) / jobs * 1e6,
                "steady_per_s": jobs / max(seconds, 1e-9),
            }
            server = server_cpu_seconds(url)
            if server is not None and first[3] is not None:
                figures["server_cpu_us_per_job"] = (server - first[3]) / jobs * 1e6
            return figures
        time.sleep(_pause(first, done, total))
    raise TimeoutError(f"{queue}: not drained in {timeout} s")


def _pause(first: tuple[int, float, float, float | None] | None, done: int, total: int) -> float:
    """Seconds until the next look at the counts: a tenth of the time the jobs
    left should take at the rate so far, from 10 ms to 0.2 s. A look counts
    the store's jobs by state, which costs more the more jobs it holds (every
    10 ms, about half a core beside a drain of 400,000 SQLite jobs)."""
    if first is None or done <= first[0]:
        return 0.01
    rate = (done - first[0]) / max(time.perf_counter() - first[2], 1e-9)
    return min(0.2, max(0.01, (total - done) / rate / 10))


def run_once(
    base_url: str,
    jobs: int,
    mode: str,
    concurrency: int,
    samples: int,
    flags: Sequence[str] = (),
    body: str = "noop",
) -> dict[str, float]:
    """One run of every workload on a fresh store."""
    import bench_app

    url = fresh_url(base_url)
    os.environ["ROTA_URL"] = url
    # read by the workers' bench_app (through the peers bench's _common)
    body_url = base_url.partition("?")[0] if base_url.startswith("redis") else None
    os.environ["BENCH_QUEUE_URL"] = body_url or os.environ.get(
        "BENCH_BODY_URL", "redis://127.0.0.1:6379/9"
    )
    os.environ["BENCH_BODY"] = body
    os.environ["BENCH_BODY_KEY"] = f"bench:body:{uuid.uuid4().hex[:8]}"
    app = bench_app.app
    app.url = url
    app.close()
    figures: dict[str, float] = {}

    # Bulk send, then the time a worker takes to drain it.
    task = getattr(bench_app, body).options(queue="tput")
    start = time.perf_counter()
    for offset in range(0, jobs, 5000):
        task.send_many([() for _ in range(min(5000, jobs - offset))])
    figures["send_per_s"] = jobs / (time.perf_counter() - start)
    # drain_per_s counts the worker's start-up; steady_per_s leaves it out
    with worker(url, mode, concurrency, "tput", flags) as proc:
        start = time.perf_counter()
        figures.update(wait_drained(app, "tput", jobs, proc))
        figures["drain_per_s"] = jobs / (time.perf_counter() - start)

    # Enqueue-to-start latency with an idle worker: one job at a time.
    stamp = bench_app.stamp.options(queue="lat")
    first = stamp.send()
    spawned = time.time()
    with worker(url, mode, concurrency, "lat", flags) as proc:
        figures["start_ms"] = (first.result(timeout=30) - spawned) * 1000  # up and idle
        figures["pss_mib"] = pss_mib(proc)
        latencies = []
        for _ in range(samples):
            sent = time.time()
            started = stamp.send().result(timeout=30)
            latencies.append((started - sent) * 1000)
            time.sleep(0.005)  # let the worker go idle again
    latencies.sort()
    figures["p50_ms"] = latencies[len(latencies) // 2]
    figures["p95_ms"] = latencies[int(len(latencies) * 0.95)]
    figures["p99_ms"] = latencies[int(len(latencies) * 0.99)]
    app.close()
    drop(url)
    if body == "roundtrip":
        import redis

        with redis.Redis.from_url(os.environ["BENCH_QUEUE_URL"]) as client:
            client.delete(os.environ["BENCH_BODY_KEY"])
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", default="sqlite:////tmp/rota-bench.db")
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--mode", default="threads", choices=["threads", "processes", "async"])
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--samples", type=int, default=300)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--quiet", action="store_true", help="worker with --quiet (no job lines)")
    parser.add_argument(
        "--body",
        default="noop",
        choices=["noop", "roundtrip", "compute"],
        help="the drained jobs: no-op, one Redis round trip of their own each, or about "
        "1 ms of pure-Python CPU each",
    )
    parser.add_argument(
        "--processes",
        default="1",
        help="comma-separated --processes values, compared in turns within each run (e.g. 1,2)",
    )
    parser.add_argument(
        "--prefetch",
        default="",
        help="comma-separated --prefetch values, compared in turns within each run "
        "(e.g. 0,2; default: the worker's own)",
    )
    args = parser.parse_args()
    if args.quiet:
        WORKER_FLAGS.append("--quiet")
    variants = [
        ("--processes", str(int(procs)), *(("--prefetch", str(int(ahead))) if ahead else ()))
        for procs in args.processes.split(",")
        for ahead in args.prefetch.split(",")
    ]
    runs: dict[str, list[dict[str, float]]] = {" ".join(v): [] for v in variants}
    compile_rota()  # (a worker's start is timed)
    for n in range(args.runs):
        for flags in variants:
            figures = run_once(
                args.url, args.jobs, args.mode, args.concurrency, args.samples, flags, args.body
            )
            runs[" ".join(flags)].append(figures)
            line = "  ".join(f"{k}={v:,.1f}" for k, v in figures.items())
            print(f"run {n + 1}, {' '.join(flags)}: {line}", flush=True)
    for label, figures_of_runs in runs.items():
        print(
            f"\nmedian of {args.runs} runs ({args.mode}, concurrency {args.concurrency}, "
            f"{args.body} jobs, {label}):"
        )
        for key in figures_of_runs[0]:
            print(f"  {key:21s} {statistics.median(r[key] for r in figures_of_runs):12,.1f}")


if __name__ == "__main__":
    main()
