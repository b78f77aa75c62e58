"""rota: the benchmark's tasks and how the benchmark sends them.

The store URL comes from ``ROTA_URL`` (``rota worker --url`` sets it too);
``BENCH_ASYNC=1`` defines the tasks as ``async def`` for ``--mode async``.
"""

from __future__ import annotations

import os

import _report

from rota import App

app = App()

if os.environ.get("BENCH_ASYNC") == "1":

    @app.task(name="noop")
    async def noop() -> None:
        """The no-op job."""
        _report.noop()

    @app.task(name="stamp")
    async def stamp() -> None:
        """The latency job."""
        _report.stamp()

    @app.task(name="sleepy")
    async def sleepy(seconds: float) -> None:
        """The I/O-bound job."""
        await _report.asleepy(seconds)

else:

    @app.task(name="noop")
    def noop() -> None:
        """The no-op job."""
        _report.noop()

    @app.task(name="stamp")
    def stamp() -> None:
        """The latency job."""
        _report.stamp()

    @app.task(name="sleepy")
    def sleepy(seconds: float) -> None:
        """The I/O-bound job."""
        _report.sleepy(seconds)


CHUNK = 5_000


def prepare() -> None:
    """Create the schema (rota migrates on first use), outside every timing."""
    app.store.queues()


def send_noop(n: int) -> None:
    """Bulk: one transaction per chunk."""
    for first in range(0, n, CHUNK):
        noop.send_many([() for _ in range(min(CHUNK, n - first))])


def send_sleep(n: int, seconds: float) -> None:
    for first in range(0, n, CHUNK):
        sleepy.send_many([(seconds,) for _ in range(min(CHUNK, n - first))])


def send_stamp() -> None:
    stamp.send()


def teardown() -> None:
    app.close()
