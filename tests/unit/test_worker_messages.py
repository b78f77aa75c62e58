"""What a worker says of an expected failure: a child process killed by a
signal names the signal; a claim whose commit is in doubt (a store server's
crash) is one warning line, not an error with a traceback."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from rota import App
from rota.errors import CommitInDoubt
from rota.worker import worker as worker_module
from rota.worker.executors import died
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
