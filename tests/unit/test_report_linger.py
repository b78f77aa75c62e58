"""How a worker batches its outcome reports: outcomes of jobs that end
together share one ``finish`` call, the report goes out as soon as no job
is left in flight (not at the end of the linger), and a lone job's outcome
is reported at once. The linger is made long here, so that ending early is
what the timings show."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from helpers import wait_for
from rota import App
from rota.models import JobState, Outcome
from rota.worker import acker
from rota.worker.worker import Worker

LINGER = 30.0


@pytest.fixture
def app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[App]:
    monkeypatch.setattr(acker, "LINGER", LINGER)
    app = App(f"sqlite:///{tmp_path / 'rota.db'}")
    yield app
    app.close()


def count_reports(app: App, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The size of every ``finish`` call the store gets from now on."""
    sizes: list[int] = []
    finish = app.store.finish

    def counted(outcomes: Sequence[Outcome]) -> list[bool]:
        sizes.append(len(outcomes))
        return finish(outcomes)

    monkeypatch.setattr(app.store, "finish", counted)
    return sizes


def running(worker: Worker) -> threading.Thread:
    thread = threading.Thread(target=worker.run, name="test-worker", daemon=True)
    thread.start()
    return thread


def test_outcomes_of_jobs_that_end_together_share_one_report_sent_once_none_is_left(
    app: App, monkeypatch: pytest.MonkeyPatch
) -> None:
    gates = {"first": threading.Event(), "rest": threading.Event()}

    @app.task(name="held")
    def held(gate: str) -> None:
        gates[gate].wait(LINGER)

    handles = [held.send("first")] + [held.send("rest") for _ in range(3)]
    reports = count_reports(app, monkeypatch)
    worker = Worker(app, concurrency=4)
    thread = running(worker)
    try:
        wait_for(lambda: worker.running == 4, what="the four jobs to start")
        gates["first"].set()  # its outcome waits for the others, which run on
        wait_for(lambda: worker.running == 3, what="the first job to end")
        opened = time.monotonic()
        gates["rest"].set()
        wait_for(
            lambda: all(h.job().state is JobState.SUCCEEDED for h in handles),
            timeout=LINGER / 3,
            what="the four outcomes to be reported",
        )
        took = time.monotonic() - opened
    finally:
        for gate in gates.values():
            gate.set()
        worker.stop()
        thread.join(LINGER)
    assert reports[:1] == [4], reports
    assert took < LINGER / 3  # reported once nothing was in flight, not after the linger


def test_a_lone_jobs_outcome_is_reported_at_once(app: App, monkeypatch: pytest.MonkeyPatch) -> None:
    @app.task(name="quick")
    def quick() -> int:
        return 1

    reports = count_reports(app, monkeypatch)
    worker = Worker(app, concurrency=4)
    thread = running(worker)
    try:
        handle = quick.send()
        wait_for(
            lambda: handle.job().state is JobState.SUCCEEDED,
            timeout=LINGER / 3,
            what="the lone outcome to be reported",
        )
    finally:
        worker.stop()
        thread.join(LINGER)
    assert reports[:1] == [1]
