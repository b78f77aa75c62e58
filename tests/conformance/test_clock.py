"""Guarantee 3: the store's clock is the only clock for run-at, leases and retries."""

from __future__ import annotations

import time

import pytest

from conformance.support import (
    claim,
    claim_one,
    enqueue_one,
    fail,
    get,
    new_job,
    open_stores,
    wait_until,
)
from rota.models import JobState
from rota.stores import Store


def test_now_is_close_to_real_time(store: Store) -> None:
    assert abs(store.now() - time.time()) < 1.0


def test_now_moves_forward(store: Store) -> None:
    first = store.now()
    time.sleep(0.05)
    second = store.now()
    assert 0.04 <= second - first < 1.0


def test_stores_on_one_url_share_a_clock(url: str) -> None:
    with open_stores(url, 2) as (a, b):
        assert abs(a.now() - b.now()) < 0.5


def test_enqueue_times_come_from_the_store_clock(store: Store) -> None:
    before = store.now()
    job_id = enqueue_one(store, new_job(delay=0.4))
    after = store.now()
    job = get(store, job_id)
    assert before - 0.05 <= job.enqueued_at <= after + 0.05
    assert job.run_at == pytest.approx(job.enqueued_at + 0.4, abs=0.05)


def test_a_job_keeps_its_send_time_as_its_run_time_moves(store: Store) -> None:
    """enqueued_at is the send, whatever moves run_at later: a retry's
    backoff, a lost attempt, a retry of the failed job."""
    job_id = enqueue_one(store, new_job(max_attempts=2, lease=0.2, max_lost=2))
    sent = get(store, job_id)
    assert sent.run_at == sent.enqueued_at and sent.priority == sent.attempt == sent.lost == 0
    wait_until(store, sent.enqueued_at + 0.05)

    first = claim_one(store)
    assert first.enqueued_at == sent.enqueued_at
    assert fail(store, first, retry_in=0.05)
    retried = get(store, job_id)
    assert retried.run_at > sent.enqueued_at + 0.05
    assert retried.enqueued_at == sent.enqueued_at

    wait_until(store, retried.run_at)
    second = claim_one(store)
    assert (second.enqueued_at, second.attempt) == (sent.enqueued_at, 2)
    wait_until(store, get(store, job_id).lease_expires + 0.01)  # type: ignore[operator]
    assert store.recover() == [job_id]
    lost = get(store, job_id)
    assert (lost.enqueued_at, lost.lost) == (sent.enqueued_at, 1)
    assert lost.run_at > sent.enqueued_at

    third = claim_one(store)
    assert fail(store, third)
    assert store.retry_failed(queue="default") == 1
    again = get(store, job_id)
    assert again.state is JobState.QUEUED and again.enqueued_at == sent.enqueued_at


def test_delayed_job_is_claimable_only_from_its_run_time(store: Store) -> None:
    job_id = enqueue_one(store, new_job(delay=0.4))
    run_at = get(store, job_id).run_at

    attempts = 0
    deadline = time.monotonic() + 10.0
    while True:
        asked_at = store.now()
        claimed = claim(store)
        if claimed:
            break
        attempts += 1
        assert time.monotonic() < deadline, "delayed job never became claimable"
        time.sleep(0.02)
    assert attempts > 0, "claimed before its run time"
    assert claimed[0].id == job_id
    assert claimed[0].started_at >= run_at
    assert store.now() >= run_at
    # it became claimable promptly once due
    assert asked_at < run_at + 2.0


def test_absolute_run_at_on_the_store_clock(store: Store) -> None:
    run_at = store.now() + 0.3
    job_id = enqueue_one(store, new_job(run_at=run_at))
    assert claim(store) == []
    now = wait_until(store, run_at)
    assert now >= run_at
    claimed = claim_one(store)
    assert claimed.id == job_id
    assert claimed.run_at == pytest.approx(run_at)
    assert claimed.started_at >= run_at


def test_lease_expiry_is_computed_from_the_store_clock(store: Store) -> None:
    job_id = enqueue_one(store, new_job(lease=0.4))
    before = store.now()
    claimed = claim_one(store)
    after = store.now()
    expires = get(store, job_id).lease_expires
    assert expires is not None
    assert before + 0.4 - 0.05 <= expires <= after + 0.4 + 0.05
    assert before - 0.05 <= claimed.started_at <= after + 0.05

    assert store.recover() == []
    wait_until(store, expires + 0.01)
    assert store.recover() == [job_id]


def test_retry_delay_is_computed_from_the_store_clock(store: Store) -> None:
    job_id = enqueue_one(store, new_job(lease=5.0, max_attempts=2))
    claimed = claim_one(store)
    before = store.now()
    assert fail(store, claimed, retry_in=0.3)
    after = store.now()
    job = get(store, job_id)
    assert before + 0.3 - 0.05 <= job.run_at <= after + 0.3 + 0.05
    assert job.state is JobState.SCHEDULED
    assert claim(store) == []
    wait_until(store, job.run_at)
    assert claim_one(store).attempt == 2
