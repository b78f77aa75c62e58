"""The export format of job results, shared by ``rota jobs export`` and the dashboard.

One row per job: JSON Lines (one object a line) or CSV (JSON values such as
arguments and results written as JSON text). Times are ISO 8601 in UTC.

A CSV cell whose text starts with ``=``, ``+``, ``-``, ``@``, a tab or a
carriage return gets a leading single quote, so a spreadsheet shows it as
text instead of evaluating it as a formula. Numbers are written as they are;
JSON Lines are never altered.
"""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime
from typing import Any

from rota import _json
from rota.errors import InvalidArgument
from rota.models import Job

__all__ = ["FIELDS", "FORMATS", "header", "line", "record"]

#: Columns of an export, in order.
FIELDS = (
    "id",
    "task",
    "queue",
    "args",
    "kwargs",
    "result",
    "attempt",
    "enqueued_at",
    "started_at",
    "finished_at",
    "schedule",
)

#: The export formats.
FORMATS = ("jsonl", "csv")

# What a spreadsheet takes for the start of a formula.
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _iso(epoch: float | None) -> str | None:
    if epoch is None:
        return None
    return datetime.fromtimestamp(epoch, tz=UTC).isoformat(timespec="milliseconds")


def record(job: Job) -> dict[str, Any]:
    """One job as an export row."""
    return {
        "id": job.id,
        "task": job.task,
        "queue": job.queue,
        "args": job.args,
        "kwargs": job.kwargs,
        "result": job.result,
        "attempt": job.attempt,
        "enqueued_at": _iso(job.enqueued_at),
        "started_at": _iso(job.started_at),
        "finished_at": _iso(job.finished_at),
        "schedule": job.schedule,
    }


def _check(fmt: str) -> None:
    if fmt not in FORMATS:
        raise InvalidArgument(f"unknown export format {fmt!r}; expected one of: jsonl, csv")


def header(fmt: str) -> str:
    """What an export file starts with: the CSV header line, nothing for JSON Lines."""
    _check(fmt)
    return _csv_line(FIELDS) if fmt == "csv" else ""


def line(fmt: str, job: Job) -> str:
    """One job as a line of an export file, with its line ending."""
    _check(fmt)
    row = record(job)
    if fmt == "jsonl":
        return _json.dumps(row).decode() + "\n"
    return _csv_line([_cell(row[name]) for name in FIELDS])


def _cell(value: Any) -> Any:
    """Numbers as they are, nothing for null, strings and JSON text neutralised."""
    if value is None:
        return ""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value
    text = value if isinstance(value, str) else _json.dumps(value).decode()
    return "'" + text if text.startswith(_FORMULA_STARTS) else text


def _csv_line(cells: Any) -> str:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\r\n").writerow(cells)
    return buffer.getvalue()
