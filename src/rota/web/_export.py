"""Streamed export of results as JSON Lines or CSV.

The rows come from :meth:`Store.iter_results`, which pages through the store
in batches, and leave as chunks of a few hundred rows: memory stays flat
however many results there are.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from rota import _json
from rota.models import Job
from rota.stores.base import Store

__all__ = ["COLUMNS", "ExportFormat", "export_chunks", "export_filename"]

#: The fields of each exported row, in CSV column order.
COLUMNS = (
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
)

_ROWS_PER_CHUNK = 500


class ExportFormat(StrEnum):
    """The export file formats."""

    JSONL = "jsonl"
    CSV = "csv"

    @property
    def media_type(self) -> str:
        """The HTTP content type of the format."""
        if self is ExportFormat.CSV:
            return "text/csv; charset=utf-8"
        return "application/x-ndjson"


def _iso(t: float | None) -> str | None:
    if t is None:
        return None
    return datetime.fromtimestamp(t, tz=UTC).isoformat(timespec="milliseconds")


def _row(job: Job) -> dict[str, Any]:
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
    }


def _csv_cell(value: Any) -> Any:
    """Strings and numbers as they are; JSON values (lists, dicts, null) as JSON."""
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        return value
    return _json.dumps(value).decode()


def export_chunks(
    store: Store, fmt: ExportFormat, queue: str | None, task: str | None
) -> Iterator[bytes]:
    """The export file of the succeeded jobs of a queue and/or task, in chunks."""
    rows = store.iter_results(queue=queue or None, task=task or None, batch=1000)
    if fmt is ExportFormat.JSONL:
        yield from _jsonl(rows)
    else:
        yield from _csv(rows)


def _jsonl(jobs: Iterator[Job]) -> Iterator[bytes]:
    chunk: list[bytes] = []
    for job in jobs:
        chunk.append(_json.dumps(_row(job)))
        if len(chunk) >= _ROWS_PER_CHUNK:
            yield b"\n".join(chunk) + b"\n"
            chunk = []
    if chunk:
        yield b"\n".join(chunk) + b"\n"


def _csv(jobs: Iterator[Job]) -> Iterator[bytes]:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerow(COLUMNS)
    for count, job in enumerate(jobs, 1):
        row = _row(job)
        writer.writerow([_csv_cell(row[name]) if row[name] is not None else "" for name in COLUMNS])
        if count % _ROWS_PER_CHUNK == 0:
            yield buffer.getvalue().encode()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue().encode()


def export_filename(fmt: ExportFormat, queue: str | None, task: str | None) -> str:
    """A safe download name such as ``results-default-crawl.fetch.csv``."""
    parts = ["results", *(p for p in (queue, task) if p)]
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", "-".join(parts))[:120]
    return f"{name}.{fmt.value}"
