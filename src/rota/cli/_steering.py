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
from rota.models import Job
from rota.stores import Store

__all__ = ["BATCH", "Step", "batched", "held_interrupt", "refused", "resolve", "steer"]


#: Jobs per store call of a steering command: ids looked up at once, jobs
#: changed at once (one call per id costs ~2 ms).
BATCH = 500


def resolve(store: Store, ids: Sequence[str]) -> tuple[list[str], dict[str, str]]:
    """Full ids for ``ids`` (each an id or a unique prefix of one), once each,
    and why each that matched no job did not (when the store said). An
    ambiguous prefix stops everything before any change; an id no job has is
    kept as given, to be reported as not found.

    Whole ids are looked up :data:`BATCH` at a time (``get_jobs``); only the
    others are searched for one by one, as prefixes."""
    whole: set[str] = set()
    asked = [job_id for job_id in dict.fromkeys(ids) if job_id]
    for start in range(0, len(asked), BATCH):
        chunk = asked[start : start + BATCH]
        found = store.get_jobs(chunk)
        whole.update(job_id for job_id, job in zip(chunk, found, strict=True) if job is not None)
    full, reasons = [], {}
    for job_id in ids:
        if job_id in whole:
            full.append(job_id)
            continue
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


def steer(ids: list[str], step: Step, done: str) -> None:
    """Run ``step`` over ``ids``, :data:`BATCH` at a time, each step whole
    (Ctrl-C waits for it); fail if any job was refused. Interrupted, say how
    many were handled and exit 130."""
    applied = refused = 0
    try:
        for start in range(0, len(ids), BATCH):
            with held_interrupt():
                ok, no = step(ids[start : start + BATCH])
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


def batched(
    store: Store,
    action: Callable[..., list[bool]],
    refusal: Callable[[str, Job | None], JobNotFound | Conflict],
    verb: str,
    done: str,
    reasons: dict[str, str],
) -> Step:
    """A step of many jobs: the admin ``action`` on all of them in one store
    call, each reported; the jobs it refused are read again in one call to
    say why (``refusal``)."""
    actor = cli_actor()

    def step(chunk: list[str]) -> tuple[int, int]:
        applied = action(chunk, by=actor)
        missed = [job_id for job_id, ok in zip(chunk, applied, strict=True) if not ok]
        now = dict(zip(missed, store.get_jobs(missed), strict=True)) if missed else {}
        for job_id, ok in zip(chunk, applied, strict=True):
            if ok:
                click.echo(f"{done} {job_id}")
            else:
                refused(verb, job_id, refusal(job_id, now[job_id]), reasons)
        return len(chunk) - len(missed), len(missed)

    return step
