"""Hostile values given straight to the store protocol are refused with
InvalidArgument, before anything is written, on every store.

Each case feeds one bad value (NaN, infinities, integers past 2**53 and
2**63, negative counts, empty names, wrong types) to one write verb, alone
and in a batch beside good values, and compares a snapshot of everything
the store shows before and after.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from conformance.raw import set_lease
from conformance.support import all_jobs, claim, get, lease, new_job, schedule
from rota._validate import MAX_TIME, MIN_TIME
from rota.errors import InvalidArgument
from rota.models import (
    BreakerKey,
    ConcurrencyKey,
    JobState,
    LeaseRef,
    NewJob,
    Outcome,
    RateKey,
)
from rota.stores import Store

NAN, INF = math.nan, math.inf
#: Times no datetime can show in every time zone: year 0 or before, and the
#: last day of year 9999 (both were inside the old bound of +-1e11).
TOO_EARLY, TOO_LATE = -9e10, 253_402_300_799.0

#: (field, value) pairs that make a NewJob invalid on every store.
BAD_FIELDS: list[tuple[str, Any]] = [
    ("id", ""),
    ("task", ""),
    ("queue", ""),
    ("priority", 2**63),
    ("priority", 2**53 + 1),
    ("priority", -(2**64)),
    ("delay", NAN),
    ("delay", INF),
    ("run_at", NAN),
    ("run_at", -INF),
    ("run_at", TOO_EARLY),
    ("run_at", TOO_LATE),
    ("max_attempts", 0),
    ("max_attempts", -1),
    ("max_attempts", 2**63),
    ("max_lost", 0),
    ("max_lost", 2**64),
    ("lease", NAN),
    ("lease", INF),
    ("lease", -INF),
    ("lease", 0.0),
    ("lease", -1.0),
    ("timeout", NAN),
    ("timeout", 0.0),
    ("timeout", INF),
    ("unique_for", NAN),
    ("unique_for", -1.0),
    ("fire_time", INF),
    ("fire_time", TOO_EARLY),
    ("fire_time", TOO_LATE),
    ("concurrency", (ConcurrencyKey("k", -1),)),
    ("concurrency", (ConcurrencyKey("", 1),)),
    ("rate", (RateKey("r", 0.0, 1),)),
    ("rate", (RateKey("r", 1.0, 0),)),
    ("breaker", (BreakerKey("b", 0, 1.0),)),
]

#: Values the Redis store encodes before its scripts see them, so that only
#: a check in Python can tell them apart: wrong types, an empty unique key
#: (None travels as ""), limit values JSON cannot carry.
BAD_TYPES: list[tuple[str, Any]] = [
    ("concurrency", (ConcurrencyKey("k", 2**63),)),
    ("rate", (RateKey("r", NAN, 1),)),
    ("breaker", (BreakerKey("b", 1, INF),)),
    ("breaker", (BreakerKey("b", 1, 1.0, ("",)),)),
    ("breaker", (BreakerKey("b", 1, 1.0, "builtins.ValueError"),)),  # type: ignore[arg-type]
    ("id", 5),
    ("payload", "not bytes"),
    ("priority", 1.5),
    ("priority", True),
    ("priority", "1"),
    ("lease", "30"),
    ("unique_key", ""),
]


def _label(case: tuple[str, Any]) -> str:
    return f"{case[0]}={case[1]!r}"


def snapshot(store: Store) -> dict[str, Any]:
    """Everything the store shows through its inspection verbs."""
    jobs = sorted(all_jobs(store), key=lambda job: job.id)
    return {
        "jobs": jobs,
        "by_id": store.get_jobs([job.id for job in jobs]),
        "queues": sorted(store.queues(), key=lambda q: q.name),
        "limits": sorted(store.limits(), key=lambda info: info.key),
        "schedules": store.schedules(),
        "totals": sorted(store.totals(), key=lambda s: (s.queue, s.task)),
    }


@pytest.fixture
def seeded(store: Store) -> Store:
    """A store with one job of each kind of state and a schedule."""
    store.enqueue([new_job(job_id="waiting", concurrency=(ConcurrencyKey("k", 2),))])
    store.enqueue([new_job(job_id="runs", queue="work")])
    store.enqueue([new_job(job_id="failed", queue="work")])
    claimed = claim(store, ["work"], 2)
    by_id = {job.id: job for job in claimed}
    store.finish([Outcome("failed", by_id["failed"].token, ok=False, error="boom")])
    store.pause_queue("paused")
    store.upsert_schedule(schedule("nightly", 1_000.0))
    return store


def refused(store: Store, call: Callable[[], object]) -> None:
    """``call`` raises InvalidArgument and leaves the store as it was."""
    before = snapshot(store)
    with pytest.raises(InvalidArgument):
        call()
    assert snapshot(store) == before


def hostile(field: str, value: Any) -> NewJob:
    job: NewJob = replace(new_job(job_id="hostile", queue="work"), **{field: value})
    return job


@pytest.mark.parametrize("case", BAD_FIELDS, ids=_label)
def test_enqueue_refuses_bad_values(seeded: Store, case: tuple[str, Any]) -> None:
    bad = hostile(*case)
    refused(seeded, lambda: seeded.enqueue([bad]))
    batch = [new_job(job_id="good-1", queue="work"), bad, new_job(job_id="good-2")]
    refused(seeded, lambda: seeded.enqueue(batch))


@pytest.mark.parametrize("case", BAD_TYPES, ids=_label)
def test_enqueue_refuses_bad_types(seeded: Store, case: tuple[str, Any]) -> None:
    bad = hostile(*case)
    refused(seeded, lambda: seeded.enqueue([new_job(job_id="good", queue="work"), bad]))


@pytest.mark.parametrize("case", BAD_FIELDS + BAD_TYPES, ids=_label)
def test_fire_schedule_refuses_bad_jobs(seeded: Store, case: tuple[str, Any]) -> None:
    bad = hostile(*case)
    refused(seeded, lambda: seeded.fire_schedule("nightly", 1_000.0, 2_000.0, bad))


@pytest.mark.parametrize(
    "args",
    [
        ("nightly", NAN, 2_000.0),
        ("nightly", 1_000.0, INF),
        ("nightly", 1_000.0, TOO_LATE),
        ("nightly", 1_000.0, TOO_EARLY),
        ("", 1_000.0, 2_000.0),
    ],
    ids=repr,
)
def test_fire_schedule_refuses_bad_times(seeded: Store, args: tuple[str, float, float]) -> None:
    refused(seeded, lambda: seeded.fire_schedule(*args, new_job(job_id="fired")))


@pytest.mark.parametrize(
    "args",
    [
        ("w", ["default"], 2**63),
        ("w", ["default"], 2**53 + 1),
        ("w", ["default"], 1.5),
        ("", ["default"], 1),
        ("w", [""], 1),
        ("w", ["default", ""], 1),
    ],
    ids=repr,
)
def test_claim_refuses_bad_arguments(seeded: Store, args: tuple[Any, Any, Any]) -> None:
    refused(seeded, lambda: seeded.claim(*args))


def test_lease_verbs_refuse_bad_refs(store: Store) -> None:
    store.enqueue([new_job(job_id="runs")])
    (job,) = claim(store, ["default"], 1)
    for bad in (LeaseRef("", "t"), LeaseRef("runs", "")):
        batch = [lease(job), bad]
        refused(store, functools.partial(store.extend, batch))
        refused(store, functools.partial(store.release, batch))
    assert store.extend([lease(job)]) == ["held"]


@pytest.mark.parametrize(
    "bad",
    [
        Outcome("runs", "t", ok=False, retry_in=NAN),
        Outcome("runs", "t", ok=False, retry_in=INF),
        Outcome("runs", "t", ok=False, retry_in=-1.0),
        Outcome("", "t", ok=True),
        Outcome("runs", "", ok=True),
        Outcome("runs", "t", ok=True, kinds=("builtins.ValueError",)),
        Outcome("runs", "t", ok=False, kinds=["builtins.ValueError"]),  # type: ignore[arg-type]
        Outcome("runs", "t", ok=False, kinds=("",)),
    ],
    ids=repr,
)
def test_finish_refuses_bad_outcomes(store: Store, bad: Outcome) -> None:
    store.enqueue([new_job(job_id="good", max_attempts=3), new_job(job_id="runs")])
    jobs = {job.id: job for job in claim(store, ["default"], 2)}
    good = Outcome("good", jobs["good"].token, ok=False, error="x", retry_in=1.0)
    bad = replace(bad, token=jobs["runs"].token) if bad.token == "t" else bad
    refused(store, lambda: store.finish([good, bad]))
    assert store.finish([good]) == [True]


@pytest.mark.parametrize(
    "verb",
    [
        lambda s: s.set_limit("k", -1),
        lambda s: s.set_limit("k", 2**63),
        lambda s: s.set_limit("k", 1.5),
        lambda s: s.set_limit("", 1),
        lambda s: s.set_rate("k", 0),
        lambda s: s.set_rate("k", -1.0),
        lambda s: s.set_rate("k", NAN),
        lambda s: s.set_rate("k", INF),
        lambda s: s.set_rate("", 1.0),
        lambda s: s.reset_breaker(""),
        lambda s: s.pause_queue(""),
        lambda s: s.resume_queue(""),
        lambda s: s.purge_queue(""),
        lambda s: s.purge_finished(NAN),
        lambda s: s.purge_finished(-1.0),
        lambda s: s.purge_finished(INF),
        lambda s: s.purge_finished(0.0, limit=-1),
        lambda s: s.purge_finished(0.0, limit=2**63),
        lambda s: s.cancel(["waiting", ""]),
        lambda s: s.cancel("waiting"),
        lambda s: s.retry(["failed", ""]),
        lambda s: s.delete(["failed", ""]),
        lambda s: s.retry_failed(queue=""),
        lambda s: s.remove_schedule(""),
        lambda s: s.set_schedule_enabled("", False),
        lambda s: s.set_schedule_enabled("nightly", "no"),
        lambda s: s.upsert_schedule(schedule("nightly", NAN)),
        lambda s: s.upsert_schedule(schedule("nightly", INF)),
        lambda s: s.upsert_schedule(schedule("nightly", TOO_EARLY)),
        lambda s: s.upsert_schedule(schedule("nightly", TOO_LATE)),
        lambda s: s.upsert_schedule(schedule("nightly", MIN_TIME - 1)),
        lambda s: s.upsert_schedule(schedule("nightly", MAX_TIME + 1)),
        lambda s: s.upsert_schedule(schedule("nightly", 1.0, jitter=INF)),
        lambda s: s.upsert_schedule(schedule("nightly", 1.0, grace=-1.0)),
        lambda s: s.upsert_schedule(schedule("nightly", 1.0, enabled="yes")),
        lambda s: s.upsert_schedule(schedule("", 1.0)),
    ],
)
def test_steering_refuses_bad_arguments(seeded: Store, verb: Callable[[Store], object]) -> None:
    refused(seeded, lambda: verb(seeded))


def test_the_bounds_of_a_stored_time_are_kept_as_they_are(store: Store) -> None:
    store.enqueue([new_job(job_id="first", run_at=MIN_TIME, fire_time=MAX_TIME)])
    store.enqueue([new_job(job_id="last", run_at=MAX_TIME, fire_time=MIN_TIME)])
    assert (get(store, "first").run_at, get(store, "first").fire_time) == (MIN_TIME, MAX_TIME)
    assert (get(store, "last").run_at, get(store, "last").fire_time) == (MAX_TIME, MIN_TIME)
    store.upsert_schedule(schedule("early", MIN_TIME))
    store.upsert_schedule(schedule("late", MAX_TIME))
    assert {s.name: s.next_fire for s in store.schedules()} == {
        "early": MIN_TIME,
        "late": MAX_TIME,
    }
    assert store.fire_schedule("late", MAX_TIME, MIN_TIME, None) == "dropped"
    assert {s.name: s.next_fire for s in store.schedules()}["late"] == MIN_TIME


def test_claim_of_a_job_stored_with_a_bad_lease_leaves_no_job_without_one(store: Store) -> None:
    store.enqueue([new_job(job_id="good-1"), new_job(job_id="bad"), new_job(job_id="good-2")])
    set_lease(store, "bad", "nan")
    claimed = {job.id: job for job in claim(store, ["default"], 3)}
    assert set(claimed) == {"good-1", "bad", "good-2"}
    now = store.now()
    for job_id, job in claimed.items():
        stored = get(store, job_id)
        assert stored.state == JobState.RUNNING
        assert stored.lease_expires is not None and math.isfinite(stored.lease_expires)
        assert now < stored.lease_expires <= now + job.lease + 1
        assert math.isfinite(job.lease) and job.lease > 0
    assert claimed["bad"].lease == 30.0
    assert store.extend([lease(job) for job in claimed.values()]) == ["held"] * 3
