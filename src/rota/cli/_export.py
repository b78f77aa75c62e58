"""Writing job results as JSON Lines or CSV for ``rota jobs export``."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import IO

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)

from rota import export
from rota.cli._support import console
from rota.models import Job, JobState
from rota.stores import Store

__all__ = ["expected_total", "write", "write_with_progress"]


def _lines(fmt: str, jobs: Iterable[Job], out: IO[str]) -> Iterator[None]:
    out.write(export.header(fmt))
    for job in jobs:
        out.write(export.line(fmt, job))
        yield None


def write(fmt: str, jobs: Iterable[Job], out: IO[str]) -> int:
    """Write ``jobs`` to ``out`` in format ``fmt``; return how many."""
    return sum(1 for _ in _lines(fmt, jobs, out))


def write_with_progress(fmt: str, jobs: Iterable[Job], out: IO[str], total: int | None) -> int:
    """:func:`write`, with a progress bar on stderr when it is a terminal."""
    err = console(stderr=True)
    progress = Progress(
        SpinnerColumn(),
        TextColumn("exporting"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        disable=not err.is_terminal,
    )
    count = 0
    with progress:
        bar = progress.add_task("export", total=total)
        for _ in _lines(fmt, jobs, out):
            count += 1
            progress.advance(bar)
    return count


def expected_total(store: Store, queue: str | None, task: str | None) -> int | None:
    """How many results an export will write, when the store can tell cheaply."""
    if task is not None:
        return None
    return sum(
        info.counts.get(JobState.SUCCEEDED, 0)
        for info in store.queues()
        if queue is None or info.name == queue
    )
