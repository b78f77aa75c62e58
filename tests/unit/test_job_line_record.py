"""A job line's log record is the one ``Logger.makeRecord`` would make, and
the text format writes the time as ``logging.Formatter`` does."""

from __future__ import annotations

import dataclasses
import logging
import multiprocessing
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from rota.worker import joblog

FIELDS = {
    "task": "noop",
    "job_id": "j1",
    "schedule": None,
    "attempt": 1,
    "duration_ms": 0.1,
    "outcome": "succeeded",
    "error": None,
    "retry_in": None,
}
#: Set per record, from the clock: compared apart.
TIMES = ("created", "msecs", "relativeCreated")


def _made(text: str) -> logging.LogRecord:
    log = joblog.log
    return log.makeRecord(log.name, logging.INFO, joblog.__file__, 0, text, (), None, extra=FIELDS)


def _without_times(record: logging.LogRecord) -> dict[str, Any]:
    return {k: v for k, v in vars(record).items() if k not in TIMES}


def test_the_record_has_what_make_record_gives_it() -> None:
    before = time.time()
    line = joblog._record("noop j1 attempt 1 succeeded in 0.1 ms", FIELDS)
    made = _made("noop j1 attempt 1 succeeded in 0.1 ms")

    assert type(line) is logging.LogRecord
    assert _without_times(line) == _without_times(made)
    assert before <= line.created <= made.created
    assert line.msecs == int((line.created - int(line.created)) * 1000)
    assert line.relativeCreated == pytest.approx(made.relativeCreated, abs=50)
    assert line.relativeCreated <= made.relativeCreated


def test_each_record_is_its_own() -> None:
    first = joblog._record("first", FIELDS)
    second = joblog._record("second", FIELDS | {"job_id": "j2"})
    assert (first.getMessage(), first.job_id) == ("first", "j1")
    assert (second.getMessage(), second.job_id) == ("second", "j2")
    assert second.created >= first.created


def test_a_thread_has_its_own_name_on_its_records() -> None:
    names: list[str] = []

    def line() -> None:
        names.append(joblog._record("x", FIELDS).threadName)

    thread = threading.Thread(target=line, name="slot-7")
    thread.start()
    thread.join()
    assert names == ["slot-7"]
    assert joblog._record("x", FIELDS).threadName == threading.current_thread().name


def _pid_of_record(conn: Any) -> None:
    conn.send((joblog._record("x", FIELDS).process, multiprocessing.current_process().pid))


def test_a_forked_child_has_its_own_process_id_on_its_records() -> None:
    joblog._record("made in the parent first", FIELDS)
    ctx = multiprocessing.get_context("fork")
    parent_end, child_end = ctx.Pipe()
    child = ctx.Process(target=_pid_of_record, args=(child_end,))
    child.start()
    try:
        assert parent_end.poll(30)
        on_record, child_pid = parent_end.recv()
    finally:
        child.join(30)
    assert on_record == child_pid == child.pid


@pytest.fixture
def own_factory() -> Iterator[list[str]]:
    seen: list[str] = []
    default = logging.getLogRecordFactory()

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = default(*args, **kwargs)
        seen.append(record.getMessage())
        return record

    logging.setLogRecordFactory(factory)
    try:
        yield seen
    finally:
        logging.setLogRecordFactory(default)


def test_an_applications_record_factory_makes_the_records(own_factory: list[str]) -> None:
    record = joblog._record("through the factory", FIELDS)
    assert own_factory == ["through the factory"]
    assert record.job_id == "j1"


def test_the_text_format_writes_what_logging_formatter_writes() -> None:
    ours, standard = joblog.TextFormatter(), logging.Formatter(joblog.TEXT_FORMAT)
    start = float(int(time.time()))
    for offset in (0.0, 0.001, 0.5, 0.999, 1.0, 1.25, 61.0, 3600.5, 0.25):
        record = _made("a line")
        record.created = start + offset
        record.msecs = int(offset % 1 * 1000) + 0.0
        assert ours.format(record) == standard.format(record)


def test_a_job_that_failed_for_good_is_a_warning_and_a_retry_is_not(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """``rota worker -q`` logs warnings: it still shows jobs that failed."""
    from rota.models import ClaimedJob, Outcome

    job = ClaimedJob(
        id="j1", task="boom", queue="default", payload=b"{}", attempt=2, max_attempts=2,
        lost=0, token="tok", lease=30.0, timeout=None, enqueued_at=0.0, run_at=0.0,
        started_at=0.0,
    )  # fmt: skip
    caplog.set_level(logging.WARNING, logger="rota.worker")
    joblog.report(job, Outcome("j1", "tok", False, error="ValueError: boom"), 0.01)
    [record] = caplog.records
    assert (record.levelno, record.levelname) == (logging.WARNING, "WARNING")
    assert record.getMessage() == "boom j1 attempt 2 failed in 10 ms: ValueError: boom"
    caplog.clear()
    first = dataclasses.replace(job, attempt=1)
    joblog.report(first, Outcome("j1", "tok", False, error="ValueError", retry_in=1.0), 0.01)
    joblog.report(job, Outcome("j1", "tok", True), 0.01)
    assert caplog.records == []  # a retry and a success are info lines
