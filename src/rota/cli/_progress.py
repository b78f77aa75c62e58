"""A count that updates on stderr while a long CLI command works (export,
purge, bulk retry): the project's rule is that long-running CLI work shows
progress."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)

from rota.cli._support import console

#: A callback given the count done so far.
Show = Callable[[int], object]

__all__ = ["counted", "counting"]


@contextmanager
def counting(label: str, total: int | None) -> Iterator[Callable[[int], None]]:
    """Show ``label``, a bar when ``total`` is known, ``done/total`` and the
    time taken on stderr when it is a terminal; yield ``show(done)`` to call
    with the count so far."""
    err = console(stderr=True)
    progress = Progress(
        SpinnerColumn(),
        TextColumn(label),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        disable=not err.is_terminal,
    )
    with progress:
        bar = progress.add_task(label, total=total)
        yield lambda done: progress.update(bar, completed=done)


def counted(label: str, total: int | None, work: Callable[[Show], int], stopped: str) -> int:
    """Run ``work(show)`` under :func:`counting` and return what it returns.
    On Ctrl-C, print ``interrupted: <stopped>`` (``stopped`` formatted with
    ``done``, the last count shown, and ``total``) on stderr and exit 130:
    what was done stays done, and ``app.admin`` has audited it."""
    done = 0
    try:
        with counting(label, total) as show:

            def seen(count: int) -> None:
                nonlocal done
                done = count
                show(count)

            return work(seen)
    except KeyboardInterrupt:
        of = "" if total is None else f" of {total}"
        console(stderr=True).print(
            "interrupted: " + stopped.format(done=done, of=of), soft_wrap=True
        )
        sys.exit(130)
