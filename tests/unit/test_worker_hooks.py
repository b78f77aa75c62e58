"""``@app.on_worker_start`` / ``@app.on_worker_stop``: per-process resources
set up before a worker claims and closed after its jobs are done."""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import pytest

from rota import App
from rota.errors import InvalidArgument
from rota.models import JobState
from rota.testing import run_until_idle
from rota.worker.worker import Worker


def test_start_hooks_run_once_before_the_first_job_and_stop_hooks_after_the_last(
    tmp_path: Path,
) -> None:
    app = App(f"sqlite:///{tmp_path / 'rota.db'}")
    events: list[str] = []
    lock = threading.Lock()

    def note(event: str) -> None:
        with lock:
            events.append(event)

    @app.on_worker_start
    def open_first() -> None:
        note("start 1")

    @app.on_worker_start
    def open_second() -> None:
        note("start 2")

    @app.on_worker_stop
    def close_first() -> None:
        note("stop 1")

    @app.on_worker_stop
    def close_second() -> None:
        note("stop 2")

    @app.task
    def work(n: int) -> int:
        note("job")
        return n

    work.send_many([(n,) for n in range(5)])
    summary = run_until_idle(app, timeout=30)

    assert summary.succeeded == 5
    assert events == ["start 1", "start 2"] + ["job"] * 5 + ["stop 2", "stop 1"]
    app.close()


def test_a_failing_start_hook_stops_the_worker_before_it_claims(tmp_path: Path) -> None:
    app = App(f"sqlite:///{tmp_path / 'rota.db'}")

    @app.on_worker_start
    def broken() -> None:
        raise RuntimeError("no connection to the search index")

    @app.task
    def work() -> None:
        return None

    handle = work.send()
    with pytest.raises(RuntimeError, match="no connection to the search index"):
        Worker(app, concurrency=1).run()
    assert handle.status() == JobState.QUEUED.value
    assert app.store.workers() == [], "no heartbeat was left behind"
    app.close()


def test_a_failing_stop_hook_is_logged_and_the_others_still_run(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    app = App(f"sqlite:///{tmp_path / 'rota.db'}")
    closed: list[str] = []

    @app.on_worker_stop
    def close_pool() -> None:
        closed.append("pool")

    @app.on_worker_stop
    def close_broken() -> None:
        raise OSError("already closed")

    @app.task
    def work() -> None:
        return None

    work.send()
    with caplog.at_level(logging.ERROR, logger="rota.worker"):
        assert run_until_idle(app, timeout=30).succeeded == 1

    assert closed == ["pool"]
    assert "worker stop hook" in caplog.text and "close_broken" in caplog.text
    app.close()


def test_hooks_must_be_functions_without_arguments() -> None:
    app = App("sqlite:///:memory:")
    with pytest.raises(InvalidArgument, match="takes a function, not 'client'"):
        app.on_worker_start("client")  # type: ignore[type-var]

    def needs_a_worker(worker: object) -> None:
        return None

    with pytest.raises(InvalidArgument, match=r"called without arguments; .*needs_a_worker"):
        app.on_worker_stop(needs_a_worker)  # type: ignore[type-var]
    assert app._on_start == [] and app._on_stop == []
