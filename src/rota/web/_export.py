"""Streamed export of results as JSON Lines, a JSON array or CSV.

The rows come from :meth:`Store.iter_results`, which pages through the store
in batches, and leave as chunks of a few hundred rows: memory stays flat
however many results there are.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from enum import StrEnum

from rota import export
from rota.models import Job
from rota.stores.base import Store
from rota.web import _ops

__all__ = ["ExportFormat", "export_chunks", "export_filename"]

_ROWS_PER_CHUNK = 500


class ExportFormat(StrEnum):
    """The export file formats."""

    JSONL = "jsonl"
    JSON = "json"
    CSV = "csv"

    @property
    def media_type(self) -> str:
        """The HTTP content type of the format."""
        if self is ExportFormat.CSV:
            return "text/csv; charset=utf-8"
        if self is ExportFormat.JSON:
            return "application/json"
        return "application/x-ndjson"


def export_chunks(
    store: Store, fmt: ExportFormat, queue: str | None, task: str | None, *, masked: bool = False
) -> Iterator[bytes]:
    """The export file of the succeeded jobs of a queue and/or task, in
    chunks; ``masked``: with the values of a command job's environment
    hidden (see :func:`rota.web._ops.masked`)."""
    rows = store.iter_results(queue=queue or None, task=task or None, batch=1000)
    yield from _chunks(fmt, map(_ops.masked, rows) if masked else rows)


def _chunks(fmt: ExportFormat, jobs: Iterator[Job]) -> Iterator[bytes]:
    chunk: list[str] = []
    for piece in export.lines(fmt.value, jobs):
        chunk.append(piece)
        if len(chunk) >= _ROWS_PER_CHUNK:
            yield "".join(chunk).encode()
            chunk = []
    if chunk:
        yield "".join(chunk).encode()


def export_filename(fmt: ExportFormat, queue: str | None, task: str | None) -> str:
    """A safe download name such as ``results-default-crawl.fetch.csv``."""
    parts = ["results", *(p for p in (queue, task) if p)]
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", "-".join(parts))[:120]
    return f"{name}.{fmt.value}"
