"""Steering jobs one step at a time for ``rota jobs cancel | retry | delete``:
each step reported whole, Ctrl-C between steps."""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence

import click

from rota.cli._actor import cli_actor
from rota.cli._support import CliError, console, note
from rota.errors import Conflict, JobNotFound
from rota.stores import Store

__all__ = ["Step", "held_interrupt", "one_by_one", "refused", "resolve", "steer"]


def resolve(store: Store, ids: Sequence[str]) -> tuple[list[str], dict[str, str]]:
    """Full ids for ``ids`` (each an id or a unique prefix of one), once each,
    and why each that matched no job did not (when the store said). An
    ambiguous prefix stops everything before any change; an id no job has is
    kept as given, to be reported as not found."""
    full, reasons = [], {}
    for job_id in ids:
        try:
            full.append(store.resolve_job_id(job_id))
        except JobNotFound as exc:
            full.append(job_id)
            if exc.reason:
                reasons[job_id] = exc.reason
    return list(dict.fromkeys(full)), reasons


@contextlib.contextmanager
def held_interrupt() -> Iterator[None]:
    """Hold Ctrl-C (SIGINT) until the block ends, then raise
    :class:`KeyboardInterrupt`: a step that changed jobs is reported whole."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: caught.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if caught:
        raise KeyboardInterrupt


#: A step of a steering command: handle some jobs, report each; return how
#: many applied and how many were refused.
Step = Callable[[list[str]], tuple[int, int]]


def steer(ids: list[str], step: Step, size: int, done: str) -> None:
    """Run ``step`` over ``ids``, ``size`` at a time, each step whole (Ctrl-C
    waits for it); fail if any job was refused. Interrupted, say how many
    were handled and exit 130."""
    applied = refused = 0
    try:
        for start in range(0, len(ids), size):
            with held_interrupt():
                ok, no = step(ids[start : start + size])
                applied, refused = applied + ok, refused + no
    except KeyboardInterrupt:
        not_done = f", {refused} could not be" if refused else ""
        note(
            f"interrupted: {applied + refused} of {len(ids)} done ({applied} {done}{not_done}); "
            "the rest were left as they were"
        )
        sys.exit(130)
    if refused:
        raise CliError(f"{refused} of {len(ids)} job(s) could not be {done}")


def refused(verb: str, job_id: str, exc: JobNotFound | Conflict, reasons: dict[str, str]) -> None:
    if isinstance(exc, JobNotFound):
        reason = exc.reason or reasons.get(job_id, "")
        why = f"not found ({reason})" if reason else "not found"
    else:  # its message says why (the job's state, or what else)
        why = str(exc)
    console(stderr=True).print(f"could not {verb} {job_id}: {why}", soft_wrap=True)


def one_by_one(action: Callable[..., str], verb: str, done: str, reasons: dict[str, str]) -> Step:
    """A step of one job: the admin ``action`` on it, reported."""

    def step(chunk: list[str]) -> tuple[int, int]:
        (job_id,) = chunk
        try:
            click.echo(f"{done} {action(job_id, by=cli_actor())}")
        except (JobNotFound, Conflict) as exc:
            refused(verb, job_id, exc, reasons)
            return 0, 1
        return 1, 0

    return step
