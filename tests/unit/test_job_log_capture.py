"""The capture of a job's output in a process: lines, bytes cut mid-character,
writes outside any job, and what a job writes through log_output."""

from __future__ import annotations

import io
import logging
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import rota
from rota.context import JobContext, reset_current, set_current
from rota.errors import InvalidArgument
from rota.worker import joblogs


@pytest.fixture
def job(tmp_path: Path) -> Iterator[JobContext]:
    """A queued job of a real SQLite store and a context for its attempt 1."""
    app = rota.App(f"sqlite:///{tmp_path / 'logs.db'}")
    task = app.task(name="t")(lambda: None)
    handle = task.send()
    ctx = JobContext(
        id=handle.id,
        task="t",
        queue="default",
        attempt=1,
        max_attempts=1,
        logger=logging.getLogger("rota.task.t"),
        app=app,
        log_sink=joblogs.write,
    )
    yield ctx
    app.close()


def stored(ctx: JobContext) -> list[tuple[str, str]]:
    assert ctx.app is not None
    return [(c.stream, c.data) for c in ctx.app.store.job_logs(ctx.id)]


def test_bytes_cut_inside_a_character_are_kept_whole(job: JobContext) -> None:
    encoded = "naïve\n".encode()
    job.log_output("stdout", encoded[:3])
    job.log_output("stdout", encoded[3:])
    job.log_output("stderr", b"tail without newline \xe2\x82")
    joblogs.end(job)
    assert stored(job) == [("stdout", "naïve\n"), ("stderr", "tail without newline \ufffd")]


def test_prints_and_logger_lines_inside_a_job_go_to_its_log_only(
    job: JobContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = io.StringIO()
    monkeypatch.setattr(sys, "stdout", real)
    monkeypatch.setattr(sys, "stderr", sys.stderr)  # install() wraps it: restored after
    task_log = logging.getLogger("rota.task")
    monkeypatch.setattr(task_log, "handlers", [])
    monkeypatch.setattr(task_log, "level", logging.INFO)
    joblogs.install()
    token = set_current(job)
    try:
        print("inside", "the job")
        job.logger.info("a %s line", "logger")
    finally:
        reset_current(token)
    print("outside")
    joblogs.end(job)
    assert real.getvalue() == "outside\n"
    [printed, logged] = stored(job)
    assert printed == ("stdout", "inside the job\n")
    assert logged[0] == "log" and logged[1].endswith(" INFO rota.task.t: a logger line\n")


def test_log_output_refuses_an_unknown_stream(job: JobContext) -> None:
    with pytest.raises(InvalidArgument, match="stdout or stderr, not 'log'"):
        job.log_output("log", "x")
    joblogs.end(job)
    assert stored(job) == []
