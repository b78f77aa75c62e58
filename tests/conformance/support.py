"""Shared helpers of the store conformance suite.

Everything here talks to a real store through the public protocol only, so
the tests that use it run unchanged on every backend.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

import orjson

from rota.models import (
    ClaimedJob,
    Job,
    JobQuery,
    JobState,
    LeaseRef,
    NewJob,
    Outcome,
    Schedule,
    WorkerInfo,
)
from rota.stores import Store, open_store

T = TypeVar("T")

WORKER = "worker-1"


def payload(*args: Any, **kwargs: Any) -> bytes:
    """A job payload as the app encodes it."""
    return orjson.dumps({"args": list(args), "kwargs": kwargs})


def new_job(
    *args: Any,
    task: str = "task",
    queue: str = "default",
    job_id: str | None = None,
    **fields: Any,
) -> NewJob:
    """A :class:`NewJob` with a fresh id; ``args`` become its positional arguments
    and ``fields`` set any other NewJob field."""
    return NewJob(
        id=job_id or uuid.uuid4().hex,
        task=task,
        queue=queue,
        payload=payload(*args),
        **fields,
    )


def enqueue_one(store: Store, job: NewJob) -> str:
    """Enqueue one job that must not be a duplicate; return its id."""
    result = store.enqueue([job])[0]
    assert not result.duplicate
    assert result.id == job.id
    return result.id


def claim(
    store: Store, queues: Sequence[str] = ("default",), limit: int = 1, worker: str = WORKER
) -> list[ClaimedJob]:
    """Claim up to ``limit`` jobs."""
    return store.claim(worker, list(queues), limit)


def claim_one(store: Store, queue: str = "default", worker: str = WORKER) -> ClaimedJob:
    """Claim exactly one job; fail if none is claimable."""
    claimed = store.claim(worker, [queue], 1)
    assert len(claimed) == 1, f"expected one claimable job in {queue!r}, got {claimed}"
    return claimed[0]


def sends_and_claims(url: str) -> None:
    """Open the store at ``url``, send a job and claim it: the store works
    for whoever the URL connects as."""
    store = open_store(url)
    try:
        sent = enqueue_one(store, new_job(1))
        assert [c.id for c in claim(store, limit=5)] == [sent]
    finally:
        store.close()


def lease(job: ClaimedJob) -> LeaseRef:
    """The lease reference of a claimed job."""
    return LeaseRef(job.id, job.token)


def succeed(store: Store, job: ClaimedJob, result: Any = None) -> bool:
    """Report success of a claimed job."""
    return store.finish([Outcome(job.id, job.token, ok=True, result=orjson.dumps(result))])[0]


def succeed_all(store: Store, queue: str = "default", batch: int = 500) -> int:
    """Claim every claimable job of ``queue``, ``batch`` at a time, and report
    each batch a success in one call; returns how many ran."""
    ran = 0
    while claimed := claim(store, [queue], limit=batch):
        outcomes = [Outcome(job.id, job.token, ok=True, result=b"null") for job in claimed]
        assert all(store.finish(outcomes))
        ran += len(claimed)
    return ran


def fail(
    store: Store,
    job: ClaimedJob,
    error: str = "ValueError: boom",
    traceback: str | None = "Traceback (most recent call last):\nValueError: boom",
    retry_in: float | None = None,
    kinds: tuple[str, ...] = (),
) -> bool:
    """Report failure of a claimed job (on an error of ``kinds``, for breakers
    that ignore some)."""
    outcome = Outcome(
        job.id,
        job.token,
        ok=False,
        error=error,
        traceback=traceback,
        retry_in=retry_in,
        kinds=kinds,
    )
    return store.finish([outcome])[0]


def get(store: Store, job_id: str) -> Job:
    """A job that must exist."""
    job = store.get_job(job_id)
    assert job is not None, f"job {job_id} is missing"
    return job


def state_of(store: Store, job_id: str) -> JobState:
    """The state of a job that must exist."""
    return get(store, job_id).state


def all_jobs(store: Store, query: JobQuery | None = None, page: int = 100) -> list[Job]:
    """Every job matching ``query``, following the pagination to the end."""
    query = query or JobQuery()
    found: list[Job] = []
    cursor: str | None = None
    for _ in range(100_000):
        result = store.list_jobs(query, limit=page, cursor=cursor)
        found.extend(result.jobs)
        if result.next_cursor is None:
            return found
        cursor = result.next_cursor
    raise AssertionError("pagination did not end")


def job_ids(store: Store, query: JobQuery | None = None) -> set[str]:
    """The ids of every job matching ``query``."""
    return {job.id for job in all_jobs(store, query)}


def wait_until(store: Store, when: float, timeout: float = 10.0) -> float:
    """Sleep until the store's clock reaches ``when``; return the store's now."""
    deadline = time.monotonic() + timeout
    while True:
        now = store.now()
        if now >= when:
            return now
        if time.monotonic() >= deadline:
            raise AssertionError(f"store clock did not reach {when} within {timeout} s")
        time.sleep(min(0.05, when - now + 0.001))


def wait_expired(store: Store, job_id: str, timeout: float = 10.0) -> None:
    """Sleep until the running job's lease has expired on the store's clock."""
    expires = get(store, job_id).lease_expires
    assert expires is not None, f"job {job_id} holds no lease"
    wait_until(store, expires + 0.01, timeout)


def claim_within(
    store: Store,
    queues: Sequence[str] = ("default",),
    limit: int = 1,
    timeout: float = 10.0,
    worker: str = WORKER,
) -> list[ClaimedJob]:
    """Claim repeatedly until something is claimed; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        claimed = store.claim(worker, list(queues), limit)
        if claimed:
            return claimed
        if time.monotonic() >= deadline:
            raise AssertionError(f"nothing became claimable in {list(queues)} within {timeout} s")
        time.sleep(0.01)


@contextmanager
def open_stores(url: str, count: int) -> Iterator[list[Store]]:
    """``count`` separate store instances on one URL, as separate machines would hold."""
    stores: list[Store] = []
    try:
        for _ in range(count):
            stores.append(open_store(url))
        yield stores
    finally:
        for store in stores:
            store.close()


def run_threads(count: int, target: Callable[[int], T], timeout: float = 60.0) -> list[T]:
    """Run ``target(i)`` for ``i`` in ``range(count)`` on threads released together;
    return the results in order, re-raising the first error."""
    barrier = threading.Barrier(count)
    results: list[Any] = [None] * count
    errors: list[BaseException] = []

    def run(index: int) -> None:
        try:
            barrier.wait(timeout)
            results[index] = target(index)
        except BaseException as exc:  # reported to the test below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(count)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + timeout
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    assert not any(t.is_alive() for t in threads), f"threads still running after {timeout} s"
    if errors:
        raise errors[0]
    return results


def schedule(
    name: str = "every-second",
    next_fire: float | None = 1_000.0,
    *,
    task: str = "task",
    trigger: dict[str, Any] | None = None,
    **fields: Any,
) -> Schedule:
    """A :class:`Schedule` value for the store's schedule verbs."""
    return Schedule(
        name=name,
        task=task,
        trigger=trigger if trigger is not None else {"type": "every", "interval": 1.0},
        payload=payload(),
        next_fire=next_fire,
        **fields,
    )


def worker_info(worker_id: str, **fields: Any) -> WorkerInfo:
    """A worker's heartbeat record."""
    values: dict[str, Any] = {
        "host": "host-a",
        "pid": 4242,
        "queues": ("default",),
        "concurrency": 4,
        "mode": "threads",
        "running": 0,
        "started_at": 1_000.0,
    }
    return WorkerInfo(id=worker_id, **(values | fields))
