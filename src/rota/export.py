"""The export format of job results, shared by ``rota jobs export`` and the dashboard.

One row per job: JSON Lines (one object a line), a JSON array (one object a
line between ``[`` and ``]``) or CSV (JSON values such as arguments and
results written as JSON text). Times are ISO 8601 in UTC. Every format is
written piece by piece (:func:`lines`), so an export of any size is streamed.

A CSV cell whose text starts with ``=``, ``+``, ``-``, ``@``, a tab or a
carriage return gets a leading single quote, so a spreadsheet shows it as
text instead of evaluating it as a formula. Numbers are written as they are;
JSON Lines are never altered.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator
from typing import Any

from rota import _json
from rota._time import shown_utc
from rota.errors import InvalidArgument
from rota.models import Job

__all__ = ["FIELDS", "FORMATS", "lines", "record"]

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
FORMATS = ("jsonl", "json", "csv")

# What a spreadsheet takes for the start of a formula.
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _iso(epoch: float | None) -> str | None:
    moment = None if epoch is None else shown_utc(epoch)
    if moment is None:  # none, or a stored value no date holds: exported as it is
        return None if epoch is None else repr(epoch)
    return moment.isoformat(timespec="milliseconds")


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


def lines(fmt: str, jobs: Iterable[Job]) -> Iterator[str]:
    """The export file of ``jobs`` in format ``fmt``, one piece per job.

    The first piece also carries the start of the file (CSV: the header line;
    JSON: the opening bracket) and a last piece closes a JSON array (or is
    the CSV header alone when there are no jobs), so
    ``"".join(lines(fmt, jobs))`` is the whole file. Jobs are read one at a
    time. An unknown format raises :class:`InvalidArgument` at once.
    """
    if fmt not in FORMATS:
        raise InvalidArgument(
            f"unknown export format {fmt!r}; expected one of: {', '.join(FORMATS)}"
        )
    return _pieces(fmt, jobs)


def _pieces(fmt: str, jobs: Iterable[Job]) -> Iterator[str]:
    start = _csv_line(FIELDS) if fmt == "csv" else "[" if fmt == "json" else ""
    for job in jobs:
        row = record(job)
        if fmt == "csv":
            text = _csv_line([_cell(row[name]) for name in FIELDS])
        elif fmt == "json":
            text = ("\n" if start else ",\n") + _json.dumps(row).decode()
        else:
            text = _json.dumps(row).decode() + "\n"
        yield start + text
        start = ""
    if fmt == "json":
        yield start + ("]\n" if start else "\n]\n")
    elif start:  # a CSV export without rows is its header
        yield start


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
