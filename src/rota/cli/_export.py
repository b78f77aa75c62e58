"""Writing job results as JSON Lines or CSV for ``rota jobs export``."""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Iterable, Iterator
from typing import IO, Any

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)

from rota._time import from_epoch
from rota.cli._support import console
from rota.models import Job, JobState
from rota.stores import Store

__all__ = ["FIELDS", "expected_total", "record", "write", "write_with_progress"]

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


def _iso(epoch: float | None) -> str | None:
    return None if epoch is None else from_epoch(epoch).isoformat()


def record(job: Job) -> dict[str, Any]:
    """One job as an export row; times are ISO 8601 in UTC."""
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


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _jsonl(jobs: Iterable[Job], out: IO[str]) -> Iterator[None]:
    for job in jobs:
        out.write(_compact(record(job)) + "\n")
        yield None


def _csv(jobs: Iterable[Job], out: IO[str]) -> Iterator[None]:
    writer = csv.DictWriter(out, fieldnames=FIELDS)
    writer.writeheader()
    for job in jobs:
        row = record(job)
        for name in ("args", "kwargs", "result"):
            row[name] = _compact(row[name])
        writer.writerow({k: "" if v is None else v for k, v in row.items()})
        yield None


WRITERS: dict[str, Callable[[Iterable[Job], IO[str]], Iterator[None]]] = {
    "jsonl": _jsonl,
    "csv": _csv,
}


def write(fmt: str, jobs: Iterable[Job], out: IO[str]) -> int:
    """Write ``jobs`` to ``out`` in format ``fmt``; return how many."""
    return sum(1 for _ in WRITERS[fmt](jobs, out))


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
        for _ in WRITERS[fmt](jobs, out):
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
