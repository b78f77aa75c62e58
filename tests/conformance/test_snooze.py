"""A snooze (an outcome with ``snooze`` and ``retry_in``) puts the job back
to run later without counting the attempt: whatever its attempts left, with
its attempt number stepped back, no history entry, no count in the stats
nor in a breaker, and its limit slots freed."""

from __future__ import annotations

import dataclasses

import pytest

from conformance.support import (
    all_jobs,
    claim,
    claim_one,
    enqueue_one,
    fail,
    get,
    new_job,
    succeed,
    wait_until,
)
from rota import InvalidArgument
from rota.models import BreakerKey, ClaimedJob, ConcurrencyKey, JobState, Outcome
from rota.stores import Store


def snooze(store: Store, job: ClaimedJob, seconds: float, why: str = "Snooze: not yet") -> bool:
    outcome = Outcome(job.id, job.token, False, error=why, retry_in=seconds, snooze=True)
    return store.finish([outcome])[0]


def test_a_snoozed_job_waits_then_runs_as_the_same_attempt(store: Store) -> None:
    job_id = enqueue_one(store, new_job(max_attempts=1))  # no retry left
    sent_at = get(store, job_id).enqueued_at
    first = claim_one(store)
    assert snooze(store, first, 0.3, "TryLater: robots.txt of http://a is not read yet")

    job = get(store, job_id)
    assert job.state is JobState.SCHEDULED
    assert job.enqueued_at == sent_at  # still the send's time: not a new send
    assert job.run_at == pytest.approx(store.now() + 0.3, abs=0.25)
    assert (job.attempt, job.history) == (0, ())
    assert (job.error, job.traceback) == ("TryLater: robots.txt of http://a is not read yet", None)
    assert job.lease_expires is None and job.worker is None
    assert claim(store) == []  # not before its time

    wait_until(store, job.run_at)
    second = claim_one(store)
    assert (second.id, second.attempt) == (job_id, 1)
    assert succeed(store, second, "done")
    done = get(store, job_id)
    assert done.state is JobState.SUCCEEDED
    assert done.enqueued_at == sent_at
    assert [(h["event"], h["attempt"]) for h in done.history] == [("succeeded", 1)]


def test_a_snooze_leaves_the_retries_as_they_were(store: Store) -> None:
    job_id = enqueue_one(store, new_job(max_attempts=2))
    sent_at = get(store, job_id).enqueued_at
    assert fail(store, claim_one(store), retry_in=0.0)  # attempt 1 fails: one retry left
    wait_until(store, get(store, job_id).run_at)
    assert snooze(store, claim_one(store), 0.0)  # attempt 2 snoozes
    assert get(store, job_id).enqueued_at == sent_at
    again = claim_one(store)
    assert again.attempt == 2
    assert fail(store, again, retry_in=0.0)  # attempt 2 fails: that was the last
    job = get(store, job_id)
    assert job.state is JobState.FAILED
    assert [(h["event"], h["attempt"]) for h in job.history] == [("failed", 1), ("failed", 2)]


def test_a_snooze_is_counted_in_no_stats_and_no_breaker(store: Store) -> None:
    breaker = (BreakerKey("api", 1, 60.0),)
    first = enqueue_one(store, new_job(1, breaker=breaker, task="fetch"))
    enqueue_one(store, new_job(2, breaker=breaker, task="fetch"))
    before = store.now()
    (claimed,) = claim(store)
    assert claimed.id == first
    assert snooze(store, claimed, 60.0)
    # a failure would have opened the breaker (threshold 1): the next job is claimable
    (other,) = claim(store)
    assert other.id != first
    assert succeed(store, other)
    minutes = [m for m in store.throughput(before - 60) if m.task == "fetch"]
    assert sum(m.succeeded for m in minutes) == 1
    assert sum(m.failed + m.retried for m in minutes) == 0


def test_a_snooze_frees_its_concurrency_slot(store: Store) -> None:
    one_at_a_time = (ConcurrencyKey("site", 1),)
    first = enqueue_one(store, new_job(1, concurrency=one_at_a_time))
    second = enqueue_one(store, new_job(2, concurrency=one_at_a_time))
    (claimed,) = claim(store, limit=2)
    assert claimed.id == first
    assert snooze(store, claimed, 60.0)
    assert [job.id for job in claim(store, limit=2)] == [second]


def test_a_job_asked_to_stop_ends_cancelled_even_if_it_snoozes(store: Store) -> None:
    job_id = enqueue_one(store, new_job())
    claimed = claim_one(store)
    assert store.cancel([job_id], by="alice") == [True]
    assert snooze(store, claimed, 1.0)
    assert get(store, job_id).state is JobState.CANCELLED


def test_a_stale_snooze_is_refused(store: Store) -> None:
    job_id = enqueue_one(store, new_job(lease=5.0))
    claimed = claim_one(store)
    assert succeed(store, claimed)
    assert not snooze(store, claimed, 1.0)
    assert get(store, job_id).state is JobState.SUCCEEDED


@pytest.mark.parametrize(
    ("ok", "retry_in"), [(True, 1.0), (False, None)], ids=["on-success", "without-retry-in"]
)
def test_a_snooze_that_is_not_a_failure_with_a_delay_is_refused(
    store: Store, ok: bool, retry_in: float | None
) -> None:
    job_id = enqueue_one(store, new_job())
    claimed = claim_one(store)
    bad = Outcome(job_id, claimed.token, ok, result=b"1" if ok else None, retry_in=retry_in)
    with pytest.raises(InvalidArgument, match="snooze"):
        store.finish([Outcome(job_id, claimed.token, False), _snoozing(bad)])
    job = get(store, job_id)
    assert (job.state, job.attempt) == (JobState.RUNNING, 1)
    assert len(all_jobs(store)) == 1


def _snoozing(outcome: Outcome) -> Outcome:
    return dataclasses.replace(outcome, snooze=True)
