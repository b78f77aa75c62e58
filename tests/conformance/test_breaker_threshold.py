"""A breaker holds its threshold: with ``failures=N``, at most N consecutive
failures of a key happen before it opens, however many claim at once.

A closed breaker admits at claim time only as many jobs in flight as it has
failures left; a success gives the whole threshold back; an open breaker
admits nothing until its cooldown has passed, then one probe. The golden
cases of tests/flow_cases.py run here against every store, as they run
against rota.flow in the unit tests.
"""

from __future__ import annotations

import sqlite3
import threading
from typing import Any

import pytest

from conformance.raw import mysql_run, pg_execute
from conformance.support import (
    claim,
    enqueue_one,
    fail,
    get,
    lease,
    new_job,
    open_stores,
    run_threads,
    succeed,
    wait_expired,
    wait_until,
)
from flow_cases import BREAKER_CASES, BreakerCase
from rota.models import BreakerKey, ClaimedJob, JobState, NewJob
from rota.stores import Store


def breaker_job(*args: object, failures: int = 3, cooldown: float = 60.0) -> NewJob:
    return new_job(*args, breaker=(BreakerKey("api", failures, cooldown),), lease=30.0)


def queue_jobs(store: Store, count: int, failures: int = 3, cooldown: float = 60.0) -> list[str]:
    jobs = [breaker_job(i, failures=failures, cooldown=cooldown) for i in range(count)]
    return [result.id for result in store.enqueue(jobs)]


def breaker_state(store: Store) -> tuple[int, float | None]:
    found = {info.key: info for info in store.limits()}
    assert "api" in found, f"limits() does not list the breaker key: {sorted(found)}"
    return found["api"].failures, found["api"].open_until


def set_breaker(
    store: Store,
    key: str,
    failures: int,
    open_until: float | None,
    inflight: int,
    probe: str | None,
) -> None:
    """Write a breaker's state behind the store's back, as a history of
    claims and outcomes would have left it."""
    if store.kind == "sqlite":
        path: str = store.path  # type: ignore[attr-defined]
        with sqlite3.connect(path) as conn:
            conn.execute(
                "INSERT INTO limits (key, failures, open_until, probe, inflight)"
                " VALUES (?, ?, ?, ?, ?)",
                (key, failures, open_until, probe, inflight),
            )
    elif store.kind == "redis":
        client: Any = store._client  # type: ignore[attr-defined]
        fields: dict[str, Any] = {"running": 0, "failures": failures, "inflight": inflight}
        if open_until is not None:
            fields["open_until"] = repr(open_until)
        if probe is not None:
            fields["probe"] = probe
        client.hset(store.keys.limit(key), mapping=fields)  # type: ignore[attr-defined]
    elif store.kind == "postgres":
        pg_execute(
            store,
            "INSERT INTO limits (key, failures, open_until, probe, inflight)"
            " VALUES (%s, %s, %s, %s, %s)",
            (key, failures, open_until, probe, inflight),
        )
    elif store.kind == "mysql":
        mysql_run(
            store,
            "INSERT INTO limits (`key`, failures, open_until, probe, inflight)"
            " VALUES (%s, %s, %s, %s, %s)",
            (key, failures, open_until, probe, inflight),
        )
    else:
        raise ValueError(f"no raw writer for {store.kind}")


# -- the golden cases, on every store ---------------------------------------------------


@pytest.mark.parametrize("case", BREAKER_CASES, ids=lambda case: case.name)
def test_breaker_admission_golden_cases(store: Store, case: BreakerCase) -> None:
    now = store.now()
    open_until = None if case.open_in is None else now + case.open_in
    probe = "probe-in-flight" if case.probe_running else None
    set_breaker(store, "api", case.failures, open_until, case.inflight, probe)
    queue_jobs(store, case.room + 3, failures=case.threshold)
    assert len(claim(store, limit=case.room + 3)) == case.room


# -- the threshold, step by step -----------------------------------------------------


def test_a_closed_breaker_admits_no_more_than_its_threshold(store: Store) -> None:
    waiting = queue_jobs(store, 10)
    assert len(claim(store, limit=10)) == 3
    assert claim(store, limit=10) == []
    queued = [job_id for job_id in waiting if get(store, job_id).state is JobState.QUEUED]
    assert len(queued) == 7, "the jobs it does not admit stay queued"


def test_after_two_failures_one_more_is_admitted(store: Store) -> None:
    queue_jobs(store, 10)
    first, second, third = claim(store, limit=10)
    assert fail(store, first) and fail(store, second)
    assert breaker_state(store) == (2, None)
    assert claim(store, limit=10) == [], "the one failure left is in flight"

    assert store.release([lease(third)]) == [True]
    admitted = claim(store, limit=10)
    assert len(admitted) == 1, "one failure left: one job in flight"
    assert claim(store, limit=10) == []

    assert fail(store, admitted[0])
    failures, open_until = breaker_state(store)
    assert failures == 3 and open_until is not None


def test_a_success_gives_the_whole_threshold_back(store: Store) -> None:
    queue_jobs(store, 10)
    first, second, third = claim(store, limit=10)
    assert fail(store, first) and fail(store, second)
    assert claim(store, limit=10) == []

    assert succeed(store, third)
    assert breaker_state(store) == (0, None)
    assert len(claim(store, limit=10)) == 3, "the parked jobs come back at once"


def test_jobs_without_the_key_run_while_it_has_no_room(store: Store) -> None:
    queue_jobs(store, 5)
    others = {r.id for r in store.enqueue([new_job("free", i) for i in range(4)])}
    claimed = {c.id for c in claim(store, limit=20)}
    assert others <= claimed
    assert len(claimed - others) == 3


def test_an_open_breaker_admits_none_until_cooldown_then_one_probe(store: Store) -> None:
    queue_jobs(store, 6, cooldown=0.5)
    running = claim(store, limit=10)
    assert len(running) == 3
    for job in running:
        assert fail(store, job)
    failures, open_until = breaker_state(store)
    assert failures == 3 and open_until is not None
    assert claim(store, limit=10) == []

    wait_until(store, open_until)
    probe = claim(store, limit=10)
    assert len(probe) == 1, "half-open: exactly one probe"
    assert claim(store, limit=10) == []

    assert succeed(store, probe[0])
    assert breaker_state(store) == (0, None)
    assert len(claim(store, limit=10)) == 2, "closed again: the two jobs left"


def test_a_reset_keeps_counting_the_jobs_in_flight(store: Store) -> None:
    queue_jobs(store, 10)
    first, *_ = claim(store, limit=10)
    assert fail(store, first)
    assert store.reset_breaker("api") is False, "a closed breaker has nothing to reset"
    assert claim(store, limit=10) == [], "two in flight, two failures left"


# -- any number of claimers ------------------------------------------------------------


@pytest.mark.parametrize("threshold", [1, 3])
def test_concurrent_claimers_fail_no_more_than_the_threshold(url: str, threshold: int) -> None:
    claimers, total = 4, 40
    with open_stores(url, claimers + 1) as stores:
        producer, workers = stores[0], stores[1:]
        queue_jobs(producer, total, failures=threshold)
        lock = threading.Lock()
        failed: list[str] = []

        def work(index: int) -> int:
            store, claimed = workers[index], 0
            for _ in range(50):
                batch: list[ClaimedJob] = claim(store, limit=8, worker=f"worker-{index}")
                claimed += len(batch)
                for job in batch:
                    assert fail(store, job)
                    with lock:
                        failed.append(job.id)
            return claimed

        counts = run_threads(claimers, work)
        assert sum(counts) == len(failed) == threshold
        failures, open_until = breaker_state(producer)
        assert failures == threshold and open_until is not None
        assert len(failed) == len(set(failed))


def test_a_released_or_lost_job_gives_its_room_back(store: Store) -> None:
    def short_lease(name: str) -> NewJob:
        return new_job(name, breaker=(BreakerKey("api", 1, 60.0),), lease=0.3)

    for name in ("released", "lost", "last"):
        enqueue_one(store, short_lease(name))
    (released,) = claim(store, limit=10)
    assert claim(store, limit=10) == []
    assert store.release([lease(released)]) == [True]

    (lost,) = claim(store, limit=10)
    assert claim(store, limit=10) == []
    wait_expired(store, lost.id)
    assert lost.id in store.recover()
    assert len(claim(store, limit=10)) == 1
