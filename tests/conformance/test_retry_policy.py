"""A job's retry policy is stored with it, shown with it and claimed with it
(sent, retried, or fired by a schedule), so the worker decides about a retry
from the job alone. (Redis's hand-off to waiting workers: test_redis_specific.py.)"""

from __future__ import annotations

import pytest

from conformance.support import all_jobs, claim, enqueue_one, get, new_job, schedule
from helpers import wait_for
from rota import InvalidArgument
from rota.models import ClaimedJob, JobState, Outcome
from rota.retry import RetryPolicy
from rota.stores import Store

#: Texts RetryPolicy.encode never writes.
UNREADABLE = [
    "not json",
    "[1, 2]",
    '{"backoff": [5, 1]}',
    '{"backoff": "soon"}',
    '{"retry_on": [3]}',
    '{"retries": 3}',
    "",
]
POLICY = RetryPolicy((2.5, 40.0), ("builtins.OSError",), ("builtins.TimeoutError",)).encode()


def test_a_claimed_job_carries_the_retry_policy_it_was_sent_with(store: Store) -> None:
    with_policy = enqueue_one(store, new_job(1, retry=POLICY))
    without = enqueue_one(store, new_job(2))
    assert (get(store, with_policy).retry, get(store, without).retry) == (POLICY, None)
    claimed = {job.id: job.retry for job in claim(store, limit=2)}
    assert claimed == {with_policy: POLICY, without: None}
    assert RetryPolicy.decode(claimed[with_policy]) == RetryPolicy(
        (2.5, 40.0), ("builtins.OSError",), ("builtins.TimeoutError",)
    )


def test_a_retried_job_keeps_its_policy(store: Store) -> None:
    job_id = enqueue_one(store, new_job(retry=POLICY, max_attempts=3))
    (first,) = claim(store)
    assert store.finish([_failed(first, retry_in=0.0)]) == [True]
    wait_for(lambda: get(store, job_id).state is JobState.QUEUED)
    (second,) = claim(store)
    assert (second.id, second.attempt, second.retry) == (job_id, 2, POLICY)


def test_a_schedule_fire_carries_the_policy(store: Store) -> None:
    store.upsert_schedule(schedule("s", 1.0, task="report"))
    fired = new_job(task="report", schedule="s", fire_time=1.0, retry=POLICY)
    assert store.fire_schedule("s", 1.0, 2.0, fired) == "fired"
    (job,) = claim(store)
    assert (job.id, job.retry) == (fired.id, POLICY)


@pytest.mark.parametrize("text", UNREADABLE)
def test_a_retry_policy_the_store_cannot_read_is_refused_and_changes_nothing(
    store: Store, text: str
) -> None:
    good = new_job(1)
    with pytest.raises(InvalidArgument, match="retry"):
        store.enqueue([good, new_job(2, retry=text)])
    assert all_jobs(store) == []


def _failed(job: ClaimedJob, retry_in: float) -> Outcome:
    return Outcome(job.id, job.token, False, error="boom", retry_in=retry_in)
