"""The supervisor of ``rota worker --processes N`` starting its children:
a stop signal during start-up ends it, and the children already started
are drained; the CLI refuses a count far above the CPU count."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator

import click
import pytest

from rota.cli.worker import MAX_PROCESSES_PER_CPU, processes_callback
from rota.worker import pool as pool_module
from rota.worker.pool import WorkerPool


class FakeProcess:
    """A child that ends at the first signal it is sent."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.signals: list[int] = []
        self.returncode: int | None = None

    def poll(self) -> int | None:
        return self.returncode

    def wait(self) -> int:
        assert self.returncode is not None, "waited for a child never signalled"
        return self.returncode

    def send_signal(self, signum: int) -> None:
        self.signals.append(signum)
        self.returncode = 0

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


@pytest.fixture
def handlers_restored() -> Iterator[None]:
    saved = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    yield
    for signum, handler in saved.items():
        signal.signal(signum, handler)


def test_a_stop_signal_during_start_up_ends_it_and_drains_the_children_started(
    monkeypatch: pytest.MonkeyPatch, handlers_restored: None
) -> None:
    pool = WorkerPool(["worker", "app.py:app"], 50, grace=1.0)
    started: list[FakeProcess] = []

    def start(child: pool_module._Child) -> None:  # a fork that takes its time
        proc = FakeProcess(1000 + child.index)
        child.proc = proc  # type: ignore[assignment]
        started.append(proc)
        if len(started) == 3:
            os.kill(os.getpid(), signal.SIGTERM)  # (its handler runs before the next start)

    monkeypatch.setattr(pool, "_start", start)
    assert pool.run() == 0
    assert len(started) == 3, "no child started after the signal"
    assert all(p.signals == [signal.SIGTERM] for p in started), "each drained"


def test_a_process_count_far_above_the_cpu_count_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    ctx = click.Context(click.Command("worker"))
    param = click.Option(["--processes"])
    most = 2 * MAX_PROCESSES_PER_CPU
    assert processes_callback(ctx, param, str(most)) == most
    assert processes_callback(ctx, param, "auto") == 2
    with pytest.raises(click.BadParameter) as refused:
        processes_callback(ctx, param, str(most + 1))
    message = refused.value.message
    assert f"{most + 1} is too many" in message and f"at most {most}" in message
    assert "--concurrency" in message
