"""What a worker says of an expected failure: a child process killed by a
signal names the signal; a claim whose commit is in doubt (a store server's
crash) is one warning line, not an error with a traceback."""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

import pytest

import rota.testing
from helpers import wait_for
from rota import App
from rota.errors import CommitInDoubt, StoreUnavailable
from rota.worker import worker as worker_module
from rota.worker.executors import died
from rota.worker.side import start_side
from rota.worker.worker import Worker


@pytest.mark.parametrize(
    ("exitcode", "said"),
    [
        (-9, "was killed by signal 9 (SIGKILL)"),
        (-15, "was killed by signal 15 (SIGTERM)"),
        (-200, "was killed by signal 200"),
        (3, "died (exit code 3)"),
        (None, "died"),
    ],
)
def test_how_a_child_process_ended(exitcode: int | None, said: str) -> None:
    assert died(exitcode) == said


def test_a_claim_whose_commit_is_in_doubt_is_one_warning_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = App(f"sqlite:///{tmp_path / 'rota.db'}")
    worker = Worker(app)
    doubt = "the connection to the MySQL store at db:3306 was lost while committing"

    def claim(*args: Any, **kwargs: Any) -> list[Any]:
        raise CommitInDoubt(doubt)

    monkeypatch.setattr(worker_module, "claim_or_wait", claim)
    worker._stopping.set()  # (no pause after the failure)
    caplog.set_level(logging.INFO, logger="rota.worker")
    assert worker._claim(1) == []
    [record] = caplog.records
    assert record.levelno == logging.WARNING and record.exc_info is None
    assert record.getMessage() == f"claim failed; retrying shortly: {doubt}"
    app.close()


def test_an_outage_of_claims_is_one_error_and_one_line_when_it_ends(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = App(f"sqlite:///{tmp_path / 'rota.db'}")
    worker = Worker(app)
    down = [True]

    def claim(*args: Any, **kwargs: Any) -> list[Any]:
        if down[0]:
            raise OSError("connection refused")
        return []

    monkeypatch.setattr(worker_module, "claim_or_wait", claim)
    worker._stopping.set()  # (no pause after a failure)
    caplog.set_level(logging.INFO, logger="rota.worker")
    for _ in range(5):
        assert worker._claim(1) == []
    down[0] = False
    assert worker._claim(1) == []
    assert worker._claim(1) == []
    said = [(r.levelno, r.getMessage(), r.exc_info is not None) for r in caplog.records]
    assert said == [
        (logging.ERROR, "claim failed; retrying every second", True),
        (logging.WARNING, "claims work again, after 5 failed", False),
    ]
    app.close()


def test_a_store_outage_is_told_in_the_stores_words_on_one_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store that cannot be reached is not a bug of the worker: the claim
    loop and each side thread say so once, in one line, without a traceback
    (an outage longer than retry_for printed one per thread)."""
    app = App(f"sqlite:///{tmp_path / 'rota.db'}")
    worker = Worker(app)
    outage = "the Redis store at 10.0.0.5:6379 is unreachable: Timeout reading from socket"

    def unreachable(*args: Any, **kwargs: Any) -> list[Any]:
        raise StoreUnavailable(outage)

    monkeypatch.setattr(worker_module, "claim_or_wait", unreachable)
    worker._stopping.set()  # (no pause after a failure)
    caplog.set_level(logging.INFO, logger="rota.worker")
    for _ in range(3):
        assert worker._claim(1) == []
    done, tries = threading.Event(), []

    def keeper() -> None:
        tries.append(1)
        if len(tries) == 3:
            done.set()
        raise StoreUnavailable(outage)

    start_side(keeper, "rota-keeper", done).join(10)
    said = [(r.levelno, r.getMessage(), r.exc_info is not None) for r in caplog.records]
    assert said == [
        (logging.WARNING, f"claim failed; retrying every second: {outage}", False),
        (logging.WARNING, f"rota-keeper failed; restarting it with backoff: {outage}", False),
    ]
    app.close()


def test_a_retention_pass_that_purged_a_full_batch_runs_again_on_the_next_turn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """More jobs finish than one pass a minute removes: the reaper keeps
    purging, a batch each turn, until it is through."""
    app = App(f"sqlite:///{tmp_path / 'rota.db'}", retention=0.001, lease=1.0)
    app.task(name="noop")(lambda: None)
    app.tasks["noop"].send_many([() for _ in range(25)])
    rota.testing.run_until_idle(app, timeout=30)
    monkeypatch.setattr(worker_module, "_PURGE_BATCH", 10)
    worker = Worker(app)
    reaper = threading.Thread(target=worker._reaper_loop, daemon=True)
    reaper.start()
    try:
        counts = lambda: {q.name: q.counts for q in app.store.queues()}.get("default", {})  # noqa: E731
        wait_for(lambda: not counts(), timeout=10, interval=0.05, what="every job purged")
    finally:
        worker._done.set()
        reaper.join(10)
    app.close()
