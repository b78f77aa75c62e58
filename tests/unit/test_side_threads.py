"""A worker's side thread (acker, keeper, reaper, scheduler) that fails runs
again after a pause, logging the first failure of a series in full, and
stops for good once the worker is done."""

from __future__ import annotations

import logging
import threading

import pytest

from rota.worker import side


def test_a_failing_side_thread_runs_again_and_logs_its_first_failure_once(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(side, "MAX_BACKOFF", 0.05)  # the pauses, cut short
    runs: list[int] = []

    def flaky() -> None:
        runs.append(len(runs))
        if len(runs) < 3:
            raise ConnectionError("the store is down")

    caplog.set_level(logging.WARNING, logger="rota.worker")
    thread = side.start_side(flaky, "rota-flaky", threading.Event())
    thread.join(5.0)

    assert not thread.is_alive()  # it returned on its third run
    assert runs == [0, 1, 2]
    assert thread.name == "rota-flaky" and thread.daemon
    failures = [r for r in caplog.records if "rota-flaky failed" in r.getMessage()]
    assert len(failures) == 1  # the series is told once
    assert failures[0].exc_info is not None
    assert failures[0].exc_info[0] is ConnectionError


def test_a_failing_side_thread_stops_once_the_worker_is_done() -> None:
    done = threading.Event()
    runs: list[int] = []

    def failing() -> None:
        runs.append(1)
        done.set()  # the worker stops while the thread waits to run again
        raise RuntimeError("boom")

    thread = side.start_side(failing, "rota-failing", done)
    thread.join(5.0)

    assert not thread.is_alive()
    assert runs == [1]
