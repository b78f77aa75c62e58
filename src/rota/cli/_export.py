"""Writing job results as JSON Lines, a JSON array or CSV for ``rota jobs export``."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import IO

from rota import export
from rota.cli._progress import counting
from rota.models import Job, JobState
from rota.stores import Store

__all__ = ["expected_total", "write", "write_with_progress"]


def write(
    fmt: str, jobs: Iterable[Job], out: IO[str], each: Callable[[], object] | None = None
) -> int:
    """Write ``jobs`` to ``out`` in format ``fmt`` (see :data:`rota.export.FORMATS`),
    one job at a time, calling ``each()`` after each job; return how many."""
    count = 0

    def counted() -> Iterator[Job]:
        nonlocal count
        for job in jobs:
            yield job
            count += 1
            if each is not None:
                each()

    for piece in export.lines(fmt, counted()):
        out.write(piece)
    return count


def write_with_progress(fmt: str, jobs: Iterable[Job], out: IO[str], total: int | None) -> int:
    """:func:`write`, with a progress bar on stderr when it is a terminal."""
    done = 0
    with counting("exporting", total) as show:

        def each() -> None:
            nonlocal done
            done += 1
            show(done)

        return write(fmt, jobs, out, each)


def expected_total(store: Store, queue: str | None, task: str | None) -> int | None:
    """How many results an export will write, when the store can tell cheaply."""
    if task is not None:
        return None
    return sum(
        info.counts.get(JobState.SUCCEEDED, 0)
        for info in store.queues()
        if queue is None or info.name == queue
    )
