"""Guarantee 5: a job blocked by a limit stays queued and is skipped, not
failed and not enqueued again: claims that pass it over leave its run time,
send time, attempt, error and priority as they were, and once the limit lets
it through it comes out in its turn."""

from __future__ import annotations

from conformance.support import (
    claim,
    claim_within,
    enqueue_one,
    fail,
    get,
    new_job,
    succeed,
)
from rota.models import BreakerKey, ConcurrencyKey, JobState, RateKey
from rota.stores import Store

ONE = (ConcurrencyKey("spiders", 1),)
BREAKER = (BreakerKey("api", 1, 60.0),)


def _pending_fields(store: Store, ids: list[str]) -> list[tuple[object, ...]]:
    """What a claim must not touch in a job it skips."""
    jobs = [get(store, job_id) for job_id in ids]
    return [(j.state, j.run_at, j.enqueued_at, j.attempt, j.error, j.priority) for j in jobs]


def _blocked_stay_as_sent(store: Store, blocked: list[str]) -> None:
    """Claim again and again while ``blocked`` jobs are held back: each stays
    queued as it was sent, not failed and not enqueued again."""
    before = _pending_fields(store, blocked)
    assert {fields[0] for fields in before} == {JobState.QUEUED}
    for _ in range(10):
        assert claim(store, limit=5) == []
    assert _pending_fields(store, blocked) == before


def _come_out_in_send_order(store: Store, blocked: list[str]) -> None:
    for job_id in blocked:
        (job,) = claim_within(store)
        assert job.id == job_id
        assert succeed(store, job)


def test_jobs_a_concurrency_limit_blocks_are_not_enqueued_again(store: Store) -> None:
    holder = enqueue_one(store, new_job("holder", concurrency=ONE, priority=3))
    blocked = [enqueue_one(store, new_job(i, concurrency=ONE, priority=3)) for i in range(5)]
    (running,) = claim(store, limit=5)
    assert running.id == holder
    _blocked_stay_as_sent(store, blocked)
    assert succeed(store, running)
    _come_out_in_send_order(store, blocked)


def test_jobs_a_rate_limit_blocks_are_not_enqueued_again(store: Store) -> None:
    rate = (RateKey("site", 0.001, 1),)
    first = enqueue_one(store, new_job("first", rate=rate, priority=3))
    blocked = [enqueue_one(store, new_job(i, rate=rate, priority=3)) for i in range(5)]
    assert [job.id for job in claim(store, limit=5)] == [first]
    _blocked_stay_as_sent(store, blocked)
    store.set_rate("site", 1000.0)
    _come_out_in_send_order(store, blocked)


def test_jobs_an_open_breaker_blocks_are_not_enqueued_again(store: Store) -> None:
    enqueue_one(store, new_job("failing", breaker=BREAKER))
    assert fail(store, claim_within(store)[0])  # one failure opens it
    blocked = [enqueue_one(store, new_job(i, breaker=BREAKER, priority=3)) for i in range(5)]
    _blocked_stay_as_sent(store, blocked)
    assert store.reset_breaker("api") is True
    _come_out_in_send_order(store, blocked)
