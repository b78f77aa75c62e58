"""What a worker says about each finished job, and its JSON log format.

One line per finished attempt on the ``rota.worker`` logger, at info level
but for a job that failed for good (no retry follows), at warning level:
task, job id, attempt, duration and outcome (the job's state as the store
ended it: a job the store was asking to cancel is ``cancelled``, whatever
its task returned); a failure adds the first line of its error, a retry
says when it comes. The same values travel on the log
record as attributes (``task``, ``job_id``, ``attempt``, ``duration_ms``,
``outcome``, ``error``), so :class:`JsonFormatter` writes them as fields.

A worker reports outcomes in batches and logs their lines together
(:func:`batch`); the commands' handler (:class:`BatchHandler`) writes such
a batch to its stream in one write, where a plain stream handler writes
and flushes each line.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
import weakref
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any, TextIO

import orjson

from rota.models import ClaimedJob, Outcome

log = logging.getLogger("rota.worker")

#: The text format of the log lines of long-running commands.
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

#: Record attributes of a job line, in the order the JSON format writes them.
FIELDS = ("task", "job_id", "schedule", "attempt", "duration_ms", "outcome", "error", "retry_in")


def outcome_name(job: ClaimedJob, outcome: Outcome, cancelled: bool = False) -> str:
    """``cancelled`` (the store was asking to cancel the job, which then ends
    so whatever the outcome), ``succeeded``, ``snoozed`` (runs again; the
    attempt does not count), ``retrying`` (the store will grant another
    attempt) or ``failed``."""
    if cancelled:
        return "cancelled"
    if outcome.ok:
        return "succeeded"
    if outcome.snooze:
        return "snoozed"
    if outcome.retry_in is not None and job.attempt - job.lost < job.max_attempts:
        return "retrying"
    return "failed"


def report(job: ClaimedJob, outcome: Outcome, seconds: float, *, cancelled: bool = False) -> None:
    """Log the line of one finished attempt that took ``seconds``; ``cancelled``:
    the store was asking to cancel the job (see :func:`outcome_name`)."""
    name = outcome_name(job, outcome, cancelled)
    level = logging.WARNING if name == "failed" else logging.INFO
    if not log.isEnabledFor(level):
        return
    ms = round(seconds * 1000.0, 1)
    failed = not outcome.ok and not cancelled
    error = (outcome.error or "").split("\n", 1)[0] if failed else None
    retry_in = outcome.retry_in if name in ("retrying", "snoozed") else None
    verb = "failed" if name == "retrying" else name  # the delay says when it runs again
    # a schedule's name says which job it is where the task's does not (rota.cmd)
    sent_by = "" if job.schedule is None else f" (schedule {job.schedule})"
    text = f"{job.task} {job.id}{sent_by} attempt {job.attempt} {verb} in {ms:g} ms"
    if error is not None:
        text += f": {error}"
    if retry_in is not None:
        text += f"; runs again in {retry_in:.1f} s"
    fields = {
        "task": job.task,
        "job_id": job.id,
        "schedule": job.schedule,
        "attempt": job.attempt,
        "duration_ms": ms,
        "outcome": name,
        "error": error,
        "retry_in": retry_in,
    }
    log.handle(_record(text, fields, level))


_made = threading.local()  # per thread: (process id, a record's attributes)


def _record(text: str, fields: dict[str, Any], level: int = logging.INFO) -> logging.LogRecord:
    """The record of a job line at ``level``, as ``Logger.makeRecord`` would make it (the
    logger's look-up of the calling line skipped), at under half the cost:
    what stays the same within a thread of one process (its name and id,
    the process's, the source) is copied from a record made once; the time,
    the message and ``fields`` are the line's own. With a record factory of
    the application's, the factory makes every record."""
    if logging.getLogRecordFactory() is not logging.LogRecord:
        return log.makeRecord(log.name, level, __file__, 0, text, (), None, extra=fields)
    pid = os.getpid()
    made = getattr(_made, "base", None)
    if made is None or made[0] != pid:  # new in this thread, or a forked child
        first = logging.LogRecord(log.name, logging.INFO, __file__, 0, "", (), None)
        made = _made.base = (pid, first.__dict__)
    base = made[1]
    now = time.time()
    record = logging.LogRecord.__new__(logging.LogRecord)
    record.__dict__ = base | fields
    record.msg = text
    if level != logging.INFO:
        record.levelno, record.levelname = level, logging.getLevelName(level)
    record.created = now
    record.msecs = int((now - int(now)) * 1000) + 0.0
    record.relativeCreated = base["relativeCreated"] + (now - base["created"]) * 1000
    return record


_batching = threading.local()  # per thread: whether its lines are held for a batch
_batch_handlers: weakref.WeakSet[BatchHandler] = weakref.WeakSet()


@contextlib.contextmanager
def batch() -> Iterator[None]:
    """Hold the lines this thread logs in the block for :class:`BatchHandler`,
    which writes them in one write when the block ends."""
    _batching.on = True
    try:
        yield
    finally:
        _batching.on = False
        for handler in list(_batch_handlers):
            if handler.holds_lines():  # (none when job lines are off)
                handler.flush()


class BatchHandler(logging.StreamHandler[TextIO]):
    """A stream handler that writes the lines of a :func:`batch` together,
    when it ends; any other record is written at once, after the lines held
    so far, so the stream keeps the order of the records."""

    def __init__(self, stream: TextIO | None = None) -> None:
        super().__init__(stream)
        self._held: list[str] = []
        _batch_handlers.add(self)

    def holds_lines(self) -> bool:
        """Whether lines wait to be written."""
        return bool(self._held)

    def emit(self, record: logging.LogRecord) -> None:
        """Hold the record's line in a batch; write it (and those held) otherwise."""
        try:
            self._held.append(self.format(record) + self.terminator)
        except Exception:
            self.handleError(record)
            return
        if not getattr(_batching, "on", False):
            self.flush()

    def flush(self) -> None:
        """Write the lines held, in one write, and flush the stream."""
        with self.lock:  # type: ignore[union-attr]  # (made in Handler.__init__)
            held, self._held = self._held, []
            # a stream gone (closed, a broken pipe) loses its lines and stops
            # no one, as a plain stream handler's failed write does
            with contextlib.suppress(OSError, ValueError):
                if held:
                    self.stream.write("".join(held))
                super().flush()


def _drop_held_in_child() -> None:
    # a child forked during a batch would write the parent's lines again
    for handler in list(_batch_handlers):
        handler._held = []


if hasattr(os, "register_at_fork"):  # (not on Windows, which does not fork)
    os.register_at_fork(after_in_child=_drop_held_in_child)


class TextFormatter(logging.Formatter):
    """rota's text lines: time, level, logger, message. The time's text is
    made once per second (``Formatter.formatTime`` makes it on every line)."""

    def __init__(self) -> None:
        super().__init__(TEXT_FORMAT)
        self._second: tuple[int, str] = (-1, "")

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        """The record's local time, as ``2026-11-28 06:34:49,088``."""
        whole = int(record.created)
        second, text = self._second
        if second != whole:
            text = time.strftime(self.default_time_format, self.converter(record.created))
            self._second = (whole, text)
        return f"{text},{int(record.msecs):03d}"


class JsonFormatter(logging.Formatter):
    """One JSON object per record: time (UTC, ISO 8601), level, logger and
    message, the job fields of a job line, and the traceback of an exception."""

    def format(self, record: logging.LogRecord) -> str:
        """The record as one line of JSON."""
        data: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for name in FIELDS:
            if name in record.__dict__:
                data[name] = record.__dict__[name]
        if record.exc_info:
            data["exception"] = self.formatException(record.exc_info)
        return orjson.dumps(data, default=str).decode()


__all__ = [
    "FIELDS",
    "TEXT_FORMAT",
    "BatchHandler",
    "JsonFormatter",
    "TextFormatter",
    "batch",
    "outcome_name",
    "report",
]
