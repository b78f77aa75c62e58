"""A count that updates on stderr while a long CLI command works (export,
purge, bulk retry): the project's rule is that long-running CLI work shows
progress."""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

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
    """Run ``work(show)`` under :func:`counting` and return what it returns;
    ``work`` calls ``show(done)`` after each part it applied.

    A first Ctrl-C stops at the next ``show`` (the end of a part, so the
    count is exact), a second at once (a store that works in one transaction
    rolls it back). Then print ``interrupted: <stopped>`` (formatted with
    ``done``, the last count shown, and ``of``, `` of <total>``) on stderr and
    exit 130: what was done stays done, and ``app.admin`` has audited it."""
    done = 0
    try:
        with counting(label, total) as show, _stop_between_parts() as check:

            def seen(count: int) -> None:
                nonlocal done
                done = count
                show(count)
                check()

            return work(seen)
    except KeyboardInterrupt:
        of = "" if total is None else f" of {total}"
        console(stderr=True).print(
            "interrupted: " + stopped.format(done=done, of=of), soft_wrap=True
        )
        sys.exit(130)


@contextmanager
def _stop_between_parts() -> Iterator[Callable[[], None]]:
    """Hold a first Ctrl-C (SIGINT) for the yielded ``check()`` to raise as
    :class:`KeyboardInterrupt`; a second raises at once."""
    if threading.current_thread() is not threading.main_thread():
        yield lambda: None
        return
    asked: list[int] = []

    def handler(signum: int, frame: FrameType | None) -> None:
        if asked:
            raise KeyboardInterrupt
        asked.append(signum)

    def check() -> None:
        if asked:
            raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield check
    finally:
        signal.signal(signal.SIGINT, previous)
