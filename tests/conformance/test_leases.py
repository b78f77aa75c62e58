"""Guarantee 2: at-least-once execution with leases, fenced by claim tokens."""

from __future__ import annotations

import logging
import threading

import orjson
import pytest

from conformance.support import (
    WORKER,
    claim,
    claim_one,
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
from rota.models import ConcurrencyKey, JobState, LeaseRef, Outcome
from rota.stores import Store


def test_claim_gives_a_token_and_a_lease(store: Store) -> None:
    job_id = enqueue_one(store, new_job("x", task="fetch", lease=5.0, timeout=2.0, max_attempts=3))
    before = store.now()
    claimed = claim_one(store, worker="w-7")
    after = store.now()

    assert claimed.id == job_id
    assert claimed.task == "fetch"
    assert orjson.loads(claimed.payload) == {"args": ["x"], "kwargs": {}}
    assert claimed.token
    assert (claimed.attempt, claimed.max_attempts, claimed.lost) == (1, 3, 0)
    assert (claimed.lease, claimed.timeout) == (5.0, 2.0)
    assert before - 0.5 <= claimed.started_at <= after + 0.5
    job = get(store, job_id)
    assert job.state is JobState.RUNNING
    assert job.worker == "w-7"
    assert job.attempt == 1
    assert job.lease_expires == pytest.approx(claimed.started_at + 5.0, abs=0.1)
    assert claim(store) == []  # a running job is not claimed twice


def test_a_claimed_jobs_lease_and_timeout_are_floats(store: Store) -> None:
    """Whole numbers included: a JobTimeout read "timed out after 1 s" from
    SQLite, which gave back 1.0 as 1, and "1.0 s" from the other stores."""
    enqueue_one(store, new_job(lease=5.0, timeout=1.0))
    claimed = claim_one(store)
    assert (type(claimed.lease), type(claimed.timeout)) == (float, float)
    assert (claimed.lease, claimed.timeout) == (5.0, 1.0)
    enqueue_one(store, new_job(lease=5.0))
    assert claim_one(store).timeout is None


def test_each_claim_gets_a_fresh_token(store: Store) -> None:
    enqueue_one(store, new_job(lease=5.0))
    first = claim_one(store)
    assert store.release([lease(first)]) == [True]
    second = claim_one(store)
    assert second.token != first.token


def test_extend_moves_the_lease(store: Store) -> None:
    job_id = enqueue_one(store, new_job(lease=2.0))
    claimed = claim_one(store)
    first = get(store, job_id).lease_expires
    assert first is not None
    wait_until(store, claimed.started_at + 0.1)

    assert store.extend([lease(claimed)]) == ["held"]
    second = get(store, job_id).lease_expires
    assert second is not None
    assert second >= first + 0.09
    assert second == pytest.approx(store.now() + 2.0, abs=0.5)
    assert store.extend([]) == []


def test_extend_keeps_a_job_past_its_first_lease(store: Store) -> None:
    job_id = enqueue_one(store, new_job(lease=0.4))
    claimed = claim_one(store)
    for _ in range(3):
        wait_until(store, store.now() + 0.2)
        assert store.extend([lease(claimed)]) == ["held"]
        assert store.recover() == []
    assert store.now() > claimed.started_at + 0.4
    assert get(store, job_id).state is JobState.RUNNING
    assert succeed(store, claimed, "kept")
    assert get(store, job_id).result == "kept"


def test_expired_lease_is_recovered_and_the_job_runs_again(store: Store) -> None:
    job_id = enqueue_one(store, new_job(lease=0.3, max_lost=3))
    first = claim_one(store, worker="doomed")
    assert store.recover() == []  # not expired yet
    wait_expired(store, job_id)

    assert store.recover() == [job_id]
    assert store.recover() == []  # recovered once only
    job = get(store, job_id)
    assert job.state is JobState.QUEUED
    assert job.lost == 1
    assert [(h["event"], h["attempt"]) for h in job.history] == [("lost", 1)]

    second = claim_one(store, worker="healthy")
    assert second.id == job_id
    assert (second.attempt, second.lost) == (2, 1)
    assert second.token != first.token


def test_stale_finish_is_refused_and_does_not_overwrite(store: Store) -> None:
    job_id = enqueue_one(store, new_job(lease=0.3))
    first = claim_one(store, worker="zombie")
    wait_expired(store, job_id)
    assert store.recover() == [job_id]

    # between recovery and the next claim the stale token holds nothing either
    assert not succeed(store, first, "zombie-early")
    assert get(store, job_id).state is JobState.QUEUED

    second = claim_one(store, worker="replacement")
    assert not succeed(store, first, "zombie")
    assert not fail(store, first)
    assert get(store, job_id).state is JobState.RUNNING
    assert store.extend([lease(first)]) == ["lost"]
    assert store.release([lease(first)]) == [False]
    assert get(store, job_id).state is JobState.RUNNING

    assert succeed(store, second, "replacement")
    assert not succeed(store, first, "zombie-late")
    job = get(store, job_id)
    assert job.state is JobState.SUCCEEDED
    assert job.result == "replacement"


def test_stale_token_cannot_extend(store: Store) -> None:
    job_id = enqueue_one(store, new_job(lease=0.3))
    first = claim_one(store)
    wait_expired(store, job_id)
    assert store.recover() == [job_id]
    assert store.extend([lease(first)]) == ["lost"]
    second = claim_one(store)
    assert store.extend([lease(first), lease(second)]) == ["lost", "held"]


def test_many_leases_extended_at_once_each_get_their_own_status(store: Store) -> None:
    # one call for many leases (a worker's claim-ahead holds up to 128), in
    # an order that is not the ids': each status is the one of its lease
    for n in range(70):
        enqueue_one(store, new_job(n, lease=30.0))
    claimed = claim(store, limit=70)
    assert len(claimed) == 70
    finished, cancelled = claimed[5::7], claimed[3]
    assert all(succeed(store, job, "done") for job in finished)
    assert store.cancel([cancelled.id]) == [True]
    asked = sorted(claimed, key=lambda job: job.token)[::-1]
    expected = [
        "lost" if job in finished else "cancel" if job is cancelled else "held" for job in asked
    ]
    assert store.extend([lease(job) for job in asked]) == expected


def test_wrong_token_is_refused(store: Store) -> None:
    job_id = enqueue_one(store, new_job(lease=5.0))
    claim_one(store)
    forged = LeaseRef(job_id, "not-the-token")
    assert store.extend([forged]) == ["lost"]
    assert store.release([forged]) == [False]
    assert store.finish([Outcome(job_id, "not-the-token", ok=True, result=b"1")]) == [False]
    assert get(store, job_id).state is JobState.RUNNING


def test_release_returns_the_job_without_counting_the_attempt(store: Store) -> None:
    job_id = enqueue_one(store, new_job(lease=5.0, max_attempts=2))
    claimed = claim_one(store)
    assert store.release([lease(claimed)]) == [True]

    job = get(store, job_id)
    assert job.state is JobState.QUEUED
    assert (job.attempt, job.lost) == (0, 0)
    assert job.lease_expires is None
    assert store.release([lease(claimed)]) == [False]  # the token is spent
    assert not succeed(store, claimed)

    again = claim_one(store)
    assert (again.attempt, again.lost) == (1, 0)
    assert store.release([]) == []


def test_release_of_a_batch_answers_per_lease(store: Store) -> None:
    a = enqueue_one(store, new_job("a", lease=5.0))
    b = enqueue_one(store, new_job("b", lease=5.0))
    first, second = claim(store, limit=2)
    assert {first.id, second.id} == {a, b}
    assert succeed(store, second)
    assert store.release([lease(first), lease(second), LeaseRef("nope", "x")]) == [
        True,
        False,
        False,
    ]
    assert get(store, first.id).state is JobState.QUEUED
    assert get(store, second.id).state is JobState.SUCCEEDED


def test_poison_job_lost_max_lost_times_ends_failed(store: Store) -> None:
    job_id = enqueue_one(store, new_job(lease=0.2, max_lost=2, max_attempts=5))
    for round_ in (1, 2):
        claimed = claim_one(store, worker=f"w-{round_}")
        assert claimed.attempt == round_
        wait_expired(store, job_id)
        assert store.recover() == [job_id]

    job = get(store, job_id)
    assert job.state is JobState.FAILED
    assert job.error == "worker_lost"
    assert job.lost == 2
    assert job.finished_at is not None
    assert [h["event"] for h in job.history] == ["lost", "lost"]
    assert claim(store) == []
    assert store.recover() == []


def test_lost_attempts_do_not_use_up_retries(store: Store) -> None:
    job_id = enqueue_one(store, new_job(lease=0.2, max_lost=3, max_attempts=2))
    claim_one(store)
    wait_expired(store, job_id)
    assert store.recover() == [job_id]

    second = claim_one(store)
    assert fail(store, second, retry_in=0.0)  # the first real try: one retry left
    assert get(store, job_id).state in (JobState.SCHEDULED, JobState.QUEUED)


def test_finish_of_unknown_job_is_refused(store: Store) -> None:
    assert store.finish([Outcome("no-such-job", "token", ok=True, result=b"null")]) == [False]
    assert store.finish([]) == []


def test_finish_of_a_queued_job_is_refused(store: Store) -> None:
    job_id = enqueue_one(store, new_job())
    assert store.finish([Outcome(job_id, "token", ok=True, result=b"1")]) == [False]
    assert get(store, job_id).state is JobState.QUEUED


def test_second_finish_is_refused(store: Store) -> None:
    job_id = enqueue_one(store, new_job(lease=5.0))
    claimed = claim_one(store)
    assert succeed(store, claimed, "first")
    assert not succeed(store, claimed, "second")
    assert not fail(store, claimed)
    job = get(store, job_id)
    assert (job.state, job.result, job.error) == (JobState.SUCCEEDED, "first", None)


def test_finish_batch_answers_per_outcome(store: Store) -> None:
    ids = [enqueue_one(store, new_job(i, lease=5.0)) for i in range(3)]
    claimed = {c.id: c for c in claim(store, limit=3)}
    assert set(claimed) == set(ids)
    outcomes = [
        Outcome(ids[0], claimed[ids[0]].token, ok=True, result=b"0"),
        Outcome("missing", "x", ok=True, result=b"1"),
        Outcome(ids[1], "stale", ok=True, result=b"2"),
        Outcome(ids[2], claimed[ids[2]].token, ok=False, error="E", traceback="T"),
    ]
    assert store.finish(outcomes) == [True, False, False, True]
    assert [get(store, i).state for i in ids] == [
        JobState.SUCCEEDED,
        JobState.RUNNING,
        JobState.FAILED,
    ]


def test_a_lease_expired_on_one_machine_is_recovered_by_another(url: str) -> None:
    with open_stores(url, 3) as (dead, reaper, worker):
        job_id = enqueue_one(dead, new_job(lease=0.3))
        stale = claim_one(dead, worker="dead")
        wait_expired(reaper, job_id)
        assert reaper.recover() == [job_id]
        fresh = claim_one(worker, worker=WORKER)
        assert fresh.attempt == 2
        assert not succeed(dead, stale, "stale")
        assert succeed(worker, fresh, "fresh")
        assert get(dead, job_id).result == "fresh"


def test_renewals_and_finishes_of_the_same_jobs_at_once_never_deadlock(
    url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A worker's keeper renews the leases of the jobs its slots finish, on
    another connection: neither may wait on the other in a cycle (a
    deadlock stalls both until the server breaks it, leases run out)."""
    with open_stores(url, 2) as (keeper, acker):
        for i in range(60):
            enqueue_one(keeper, new_job(i, lease=30.0))
        jobs = sorted(claim(keeper, limit=60), key=lambda job: job.id)
        assert len(jobs) == 60
        caplog.set_level(logging.DEBUG, logger="rota.store")
        finished = threading.Event()

        def renew() -> None:
            refs = [lease(job) for job in reversed(jobs)]  # the worker's order is any order
            while not finished.is_set():
                keeper.extend(refs)

        def finish() -> list[bool]:
            applied: list[bool] = []
            try:
                for start in range(0, len(jobs), 6):
                    batch = jobs[start : start + 6]
                    applied += acker.finish([Outcome(j.id, j.token, True) for j in batch])
            finally:
                finished.set()
            return applied

        _, applied = run_threads(2, lambda i: renew() if i == 0 else finish())
    assert applied == [True] * 60
    retried = [r.getMessage() for r in caplog.records if "transaction again" in r.getMessage()]
    assert retried == []


def test_a_finish_or_renewal_after_expiry_is_accepted_until_a_reaper_runs(store: Store) -> None:
    """A lease that ran out is still the worker's until a reaper moves the
    job on: its finish or renewal is taken, and the reaper then finds nothing."""
    finished = enqueue_one(store, new_job("finished", lease=0.3))
    renewed = enqueue_one(store, new_job("renewed", lease=0.3))
    late = {job.id: job for job in claim(store, limit=2)}
    wait_expired(store, finished)
    wait_expired(store, renewed)

    assert succeed(store, late[finished], "late")
    assert store.extend([lease(late[renewed])]) == ["held"]
    expires = get(store, renewed).lease_expires
    assert expires is not None and expires > store.now()
    assert store.recover() == []
    done = get(store, finished)
    assert (done.state, done.result, done.lost) == (JobState.SUCCEEDED, "late", 0)
    assert [h["event"] for h in done.history] == ["succeeded"]
    assert get(store, renewed).state is JobState.RUNNING
    assert succeed(store, late[renewed])


def test_reapers_racing_a_late_finisher_settle_each_job_once(url: str) -> None:
    """Three reapers recover the same expired leases at once while their
    worker reports them late: each job ends either finished or recovered,
    by one reaper, with one entry for its attempt, and no slot left taken."""
    total = 60
    with open_stores(url, 4) as stores:
        finisher, reapers = stores[0], stores[1:]
        key = (ConcurrencyKey("spiders", total),)
        finisher.enqueue([new_job(i, lease=0.3, concurrency=key) for i in range(total)])
        claimed = claim(finisher, limit=total)
        assert len(claimed) == total
        for job in claimed:
            wait_expired(finisher, job.id)

        def race(index: int) -> list[str]:
            if index < len(reapers):
                return reapers[index].recover()
            late = [job for job in claimed if succeed(finisher, job, "late")]
            return [job.id for job in late]

        *recovered, finished = run_threads(len(reapers) + 1, race)
        reaped = [job_id for ids in recovered for job_id in ids]
        assert len(reaped) == len(set(reaped)), "a job recovered by two reapers"
        assert set(reaped).isdisjoint(finished), "a job both finished and recovered"
        assert set(reaped) | set(finished) == {job.id for job in claimed}
        for job in finisher.get_jobs([job.id for job in claimed]):
            assert job is not None
            events = [(h["event"], h["attempt"]) for h in job.history]
            if job.id in finished:
                assert (job.state, job.lost, events) == (JobState.SUCCEEDED, 0, [("succeeded", 1)])
            else:
                assert (job.state, job.lost, events) == (JobState.QUEUED, 1, [("lost", 1)])
        assert finisher.recover() == []
        spiders = {info.key: info for info in finisher.limits()}["spiders"]
        assert spiders.running == 0
