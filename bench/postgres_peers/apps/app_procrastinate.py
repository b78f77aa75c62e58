"""procrastinate: the benchmark's tasks and how the benchmark sends them.

The database comes from ``BENCH_PG_URL``. The tasks are ``async def``, the
kind procrastinate's worker runs on its event loop; a plain ``def`` task runs
in the event loop's default thread pool instead (a few threads: ``min(32,
CPUs + 4)``), so the I/O-bound task is ``async def`` unless ``BENCH_SYNC=1``.
"""

from __future__ import annotations

import os

import _report
from procrastinate import App, PsycopgConnector

app = App(connector=PsycopgConnector(conninfo=os.environ["BENCH_PG_URL"]))


@app.task(name="noop")
async def noop() -> None:
    """The no-op job."""
    _report.noop()


@app.task(name="stamp")
async def stamp() -> None:
    """The latency job."""
    _report.stamp()


if os.environ.get("BENCH_SYNC") == "1":

    @app.task(name="sleepy")
    def sleepy(seconds: float) -> None:
        """The I/O-bound job, blocking: run in the worker's thread pool."""
        _report.sleepy(seconds)

else:

    @app.task(name="sleepy")
    async def sleepy(seconds: float) -> None:
        """The I/O-bound job."""
        await _report.asleepy(seconds)


CHUNK = 5_000


async def setup() -> None:
    await app.open_async()


async def prepare() -> None:
    """Apply procrastinate's schema to the fresh database."""
    await app.schema_manager.apply_schema_async()


async def send_noop(n: int) -> None:
    """Bulk: ``batch_defer_async``, one statement per chunk."""
    for first in range(0, n, CHUNK):
        await noop.batch_defer_async(*({} for _ in range(min(CHUNK, n - first))))


async def send_sleep(n: int, seconds: float) -> None:
    for first in range(0, n, CHUNK):
        count = min(CHUNK, n - first)
        await sleepy.batch_defer_async(*({"seconds": seconds} for _ in range(count)))


async def send_stamp() -> None:
    await stamp.defer_async()


async def teardown() -> None:
    await app.close_async()
