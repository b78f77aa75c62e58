"""The tasks the benchmarks run."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from rota import App, Limit, current_job

# the peers bench's job bodies, so that both benches' round trips are the same
sys.path.insert(0, str(Path(__file__).resolve().parent / "redis_peers" / "apps"))
import _common

app = App(
    os.environ.get("ROTA_URL", "sqlite:///bench.db"),
    retention=os.environ.get("BENCH_RETENTION", "7d"),  # bench/soak.py purges as it goes
)


@app.task()
def noop() -> None:
    """Does nothing: measures rota's own overhead."""


@app.task()
def roundtrip() -> None:
    """One Redis round trip of its own: a short job that does I/O, as most
    jobs do (the peers bench's body, ``BENCH_BODY=roundtrip``)."""
    _common.roundtrip()


#: The loop of a ``compute`` job: about 1 ms of pure-Python CPU on a small machine.
COMPUTE_STEPS = int(os.environ.get("BENCH_COMPUTE_STEPS", "20000"))


@app.task()
def compute() -> int:
    """A CPU-bound job: a loop of pure Python that holds the interpreter's
    lock throughout (what ``--processes`` is for)."""
    total = 0
    for i in range(COMPUTE_STEPS):
        total += i * i % 7
    return total


@app.task()
def stamp() -> float:
    """Returns the time it started, for enqueue-to-start latency."""
    return time.time()


@app.task()
def sleepy(seconds: float) -> None:
    """Sleeps: an I/O-bound job."""
    time.sleep(seconds)


@app.task(retries=2, backoff=(0.01, 0.05), concurrency=Limit("soak-site", 4))
def chore(n: int) -> dict[str, int]:
    """A job of the soak bench (``bench/soak.py``): it logs and prints a
    line, holds a concurrency slot, returns a small result, and every
    tenth one fails its first attempt (then succeeds on the retry)."""
    job = current_job()
    job.logger.info("chore %d, attempt %d", n, job.attempt)
    print(f"chore {n} working")
    if n % 10 == 0 and job.attempt == 1:
        raise RuntimeError(f"chore {n}: a first attempt that fails")
    return {"n": n, "attempt": job.attempt}
