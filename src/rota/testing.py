"""Testing tasks: run jobs inline in the calling thread, or drain a store with a real worker.

``with rota.testing.inline(app):`` points ``app`` at a private in-memory
SQLite store and runs every job it sends at once, in the sending thread,
through the same store verbs a worker uses (claim, finish), so states,
uniqueness, limits, attempts and history are the store's own:

- ``send``/``send_many`` run the job before returning; ``result()`` returns
  its result or raises :class:`~rota.errors.JobFailed`;
- jobs a task sends run after its attempt, in queue order (no recursion);
- a failed attempt with retries left runs again at once: the backoff is
  skipped, the attempt count and history are those a worker leaves;
- a snoozed job (:class:`~rota.errors.Snooze`) runs again at once too, up
  to :data:`SNOOZES_SKIPPED` times in one ``send``; its next snooze leaves it
  ``scheduled`` for its delay, as a worker would, once the other runnable
  jobs have run (it is not run again in that ``send``, however short the
  delay);
- ``current_job()`` works inside the task;
- delayed jobs (``send_in``, ``send_at``) stay ``scheduled`` until due; they
  run when a later ``send`` or ``result(timeout=...)`` finds them due, or
  under :func:`run_until_idle`;
- a job a limit or a paused queue holds stays ``queued``, as in the store;
  ``result()`` without a timeout then raises :class:`~rota.errors.JobTimeout`
  instead of waiting for ever;
- a task's ``timeout`` is not enforced (no worker watches the attempt).

:func:`run_until_idle` runs a real :class:`~rota.worker.worker.Worker`
(threads mode) in this process on the app's store until nothing is left to
do, then stops it.
"""

from __future__ import annotations

import dataclasses
import os
import socket
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from rota import _validate
from rota._time import parse_duration
from rota.app import App
from rota.errors import InvalidArgument, JobTimeout
from rota.models import HostScope, JobQuery, JobState, NewJob, Outcome
from rota.stores import open_store
from rota.worker import runner
from rota.worker.worker import Worker

__all__ = ["Inline", "RunSummary", "inline", "run_until_idle"]

MEMORY_URL = "sqlite:///:memory:"
#: How many times in a row one ``send`` runs a snoozed job again at once.
SNOOZES_SKIPPED = 20


class Inline:
    """Runs an app's jobs in the thread that sends them (see :func:`inline`)."""

    def __init__(self, app: App) -> None:
        self.app = app
        #: The worker id the store records for inline attempts.
        self.worker_id = f"inline-{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        self._queues = {task.opts.queue for task in app.tasks.values()}
        self._local = threading.local()

    def sent(self, jobs: Sequence[NewJob]) -> None:
        """Run ``jobs`` (just enqueued) and whatever else is runnable."""
        self._queues.update(job.queue for job in jobs)
        self.run_pending()

    def run_pending(self) -> int:
        """Run every job that is runnable now, one at a time, until none is;
        return how many attempts ran. Within a running job it does nothing:
        the jobs that job sends run after its attempt."""
        if getattr(self._local, "running", False):
            return 0
        store = self.app.store
        self._local.running = True
        ran = 0
        snoozed: Counter[str] = Counter()
        # snoozes past SNOOZES_SKIPPED, finished once the loop ends: their
        # jobs stay claimed until then, so however short the snooze, the
        # loop does not run them again (it ends)
        waiting: list[Outcome] = []
        try:
            # every job runs here, whatever host it was sent to
            anywhere = HostScope(grace=0.0)
            while claimed := store.claim(self.worker_id, sorted(self._queues), 1, anywhere):
                job = claimed[0]
                outcome = runner.to_outcome(job, runner.run_sync(self.app, job))
                ran += 1
                if outcome.snooze:
                    snoozed[job.id] += 1
                    if snoozed[job.id] > SNOOZES_SKIPPED:
                        waiting.append(outcome)
                        continue
                if outcome.retry_in is not None:
                    outcome = dataclasses.replace(outcome, retry_in=0.0)  # backoff skipped
                store.finish([outcome])
        finally:
            try:
                if waiting:
                    store.finish(waiting)
            finally:
                self._local.running = False
        return ran


@contextmanager
def inline(app: App, url: str = MEMORY_URL) -> Iterator[Inline]:
    """Run ``app``'s jobs at once in the sending thread, on a private store.

    The store is a fresh in-memory SQLite database unless ``url`` names
    another (e.g. a Redis namespace, to test against that store); it is
    closed on exit and the app gets its own store back. ``app.close()``
    inside the block leaves it open, jobs and all.
    """
    if app._inline is not None:
        raise InvalidArgument("this app is already in inline mode")
    private = open_store(url)
    saved = app._store, app._opened_url
    runner_ = Inline(app)
    app.use_store(private)
    app._inline = runner_
    app._held_store = private  # app.close() in the block keeps it
    try:
        yield runner_
    finally:
        app._inline = None
        app._held_store = None
        app._store, app._opened_url = saved
        private.close()


@dataclass(frozen=True, slots=True)
class RunSummary:
    """What :func:`run_until_idle` did."""

    #: Attempts that succeeded.
    succeeded: int
    #: Attempts that failed (those retried included).
    failed: int
    #: Jobs left scheduled past the deadline (or in paused queues).
    waiting: int


def run_until_idle(
    app: App,
    timeout: float | str = 30.0,
    *,
    queues: str | Iterable[str] | None = None,
    concurrency: int = 4,
) -> RunSummary:
    """Run a worker (threads mode) on ``app``'s store until idle, then stop it.

    Idle: no job of ``queues`` (one queue name, or several; default: every
    queue of the app's tasks and of the store) is queued or running, and none
    is scheduled to come due before ``timeout`` seconds have passed; jobs of
    paused queues are left alone. A queue that neither a task of the app nor
    the store knows is refused (:class:`InvalidArgument`), as is an empty
    list. Raises :class:`JobTimeout` when jobs are still queued or running
    after ``timeout`` seconds (a limit holding them, a task that never
    returns); the worker is stopped either way. ``timeout`` is seconds, or a
    duration such as ``"5s"``.
    """
    timeout = parse_duration(timeout, what="timeout", positive=True)
    deadline = time.monotonic() + timeout
    store = app.store
    names = _queue_names(app, queues)
    worker = Worker(app, queues=names, concurrency=concurrency, grace=timeout, heartbeat=60.0)
    suspended, app._inline = app._inline, None  # the worker runs what tasks send
    thread = threading.Thread(target=worker.run, name="rota-run-until-idle", daemon=True)
    thread.start()
    busy, quiet_since = 0, None
    try:
        while time.monotonic() < deadline:
            # idle for _SETTLE seconds in a row: a job passing between two
            # structures (an outcome on its way, a retry coming due) is not
            # mistaken for the end of the work
            busy = _busy(app, names, deadline)
            if busy:
                quiet_since = None
            elif quiet_since is None:
                quiet_since = time.monotonic()
            elif time.monotonic() - quiet_since >= _SETTLE:
                break
            time.sleep(0.01)
    finally:
        worker.stop()
        thread.join(timeout + 30.0)
        app._inline = suspended
    if busy:
        raise JobTimeout(f"run_until_idle: {busy} job(s) still queued or running after {timeout} s")
    waiting = sum(
        q.counts.get(JobState.SCHEDULED, 0) + q.counts.get(JobState.QUEUED, 0)
        for q in store.queues()
        if q.name in names
    )
    return RunSummary(worker.processed, worker.failed, waiting)


#: Seconds the store must look idle in a row before run_until_idle stops.
_SETTLE = 0.2


def _all_queues(app: App) -> set[str]:
    return {t.opts.queue for t in app.tasks.values()} | {q.name for q in app.store.queues()}


def _queue_names(app: App, queues: str | Iterable[str] | None) -> list[str]:
    """The queues ``run_until_idle`` serves: ``queues`` checked, or every known queue."""
    known = _all_queues(app)
    if queues is None:
        return sorted(known)
    if isinstance(queues, str):
        queues = [queues]
    elif not isinstance(queues, Iterable):
        raise InvalidArgument(
            f"queues must be a queue name or a list of them, not {type(queues).__name__}"
        )
    names = sorted({_validate.name(queue, "queue") for queue in queues})
    if not names:
        raise InvalidArgument("queues must name at least one queue (None: every queue)")
    unknown = [name for name in names if name not in known]
    if unknown:
        raise InvalidArgument(
            f"unknown queue {unknown[0]!r}; the queues here are: {', '.join(sorted(known))} "
            f"(those of the app's tasks and of the store)"
        )
    return names


def _busy(app: App, names: Sequence[str], deadline: float) -> int:
    """Jobs of ``names`` still to run before ``deadline``: queued or running
    in unpaused queues, or scheduled to come due by then."""
    store = app.store
    active = {q.name: q.counts for q in store.queues() if q.name in names and not q.paused}
    busy = sum(c.get(JobState.QUEUED, 0) + c.get(JobState.RUNNING, 0) for c in active.values())
    if busy or not any(c.get(JobState.SCHEDULED) for c in active.values()):
        return busy
    due_by = store.now() + max(0.0, deadline - time.monotonic())
    page = store.list_jobs(JobQuery(state=JobState.SCHEDULED), limit=1000)
    return sum(1 for j in page.jobs if j.queue in active and j.run_at <= due_by)
