"""claim_or_wait: a worker with free slots waits for work and gets it claimed.

On Redis (a store with the WaitingClaims capability) a waiting worker is
registered as idle and new jobs are claimed for it by the enqueue itself
(lua/_claim.lua); elsewhere the worker claims, waits and claims again. These
tests hold on every store: a job sent to waiting workers is claimed once,
within the waiter's free slots, with a lease like any claim.
"""

from __future__ import annotations

import threading
import time
from collections import Counter

import pytest

from conformance.support import (
    claim,
    claim_one,
    enqueue_one,
    fail,
    get,
    new_job,
    succeed,
    wait_expired,
    wait_until,
)
from helpers import wait_for
from rota import InvalidArgument
from rota.models import BreakerKey, ClaimedJob, ConcurrencyKey, JobState, RateKey
from rota.stores import Store, open_store
from rota.stores.roles import claim_or_wait, stop_waiting


class Waiter:
    """A thread calling claim_or_wait in a loop on its own store instance."""

    def __init__(self, url: str, worker: str, queue: str, slots: int) -> None:
        self.store = open_store(url)
        self.worker, self.queue, self.slots = worker, queue, slots
        self.jobs: list[ClaimedJob] = []
        self.rounds = 0  # claim_or_wait calls returned
        self.stop = threading.Event()
        self.blocked = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.is_set():
            free = self.slots - len(self.jobs)
            if free <= 0:
                return
            self.blocked.set()
            self.jobs += claim_or_wait(self.store, self.worker, [self.queue], free, 0.5)
            self.rounds += 1

    def close(self) -> None:
        self.stop.set()
        self.thread.join(10)
        self.store.remove_worker(self.worker)
        self.store.close()


def test_claim_or_wait_claims_at_once_when_work_is_there(store: Store) -> None:
    job_id = enqueue_one(store, new_job())
    started = time.monotonic()
    jobs = claim_or_wait(store, "w", ["default"], 4, 10.0)
    assert [j.id for j in jobs] == [job_id]
    assert time.monotonic() - started < 2.0
    assert get(store, job_id).state == JobState.RUNNING


def test_claim_or_wait_returns_empty_after_its_timeout(store: Store) -> None:
    started = time.monotonic()
    assert claim_or_wait(store, "w", ["default"], 4, 0.3) == []
    assert 0.2 <= time.monotonic() - started < 5.0


def test_an_interrupted_wait_ends_at_once_and_the_next_one_waits(store: Store) -> None:
    """interrupt_waits() ends a wait under way in the process (a stopping
    worker does not sit out its last wait), as a spurious wake-up would: the
    next wait waits."""
    returned = threading.Event()

    def wait() -> None:
        store.wait(["default"], 10.0)
        returned.set()

    thread = threading.Thread(target=wait, daemon=True)
    started = time.monotonic()
    thread.start()
    # (until the wait has begun and seen it)
    wait_for(lambda: store.interrupt_waits() or returned.is_set(), 2.0, 0.05, "the wait to end")
    assert time.monotonic() - started < 2.5
    thread.join(15)
    started = time.monotonic()
    store.wait(["default"], 0.3)
    assert time.monotonic() - started >= 0.25, "no interrupt is left over for the next wait"


def test_an_interrupted_waiting_claim_returns_empty_at_once(store: Store) -> None:
    """A worker's waiting claim, as a stopping worker has one under way,
    returns no job once interrupt_waits() is called, not at its timeout."""
    got: list[list[ClaimedJob]] = []

    def claim() -> None:
        got.append(claim_or_wait(store, "w", ["default"], 4, 10.0))

    thread = threading.Thread(target=claim, daemon=True)
    started = time.monotonic()
    thread.start()
    try:
        wait_for(lambda: store.interrupt_waits() or bool(got), 2.0, 0.05, "the claim to return")
        assert got == [[]]
        assert time.monotonic() - started < 2.5
    finally:
        thread.join(15)
        store.remove_worker("w")


def test_a_job_sent_to_a_waiting_worker_reaches_it_promptly(store: Store, url: str) -> None:
    waiter = Waiter(url, "w", "cw", 4)
    try:
        assert waiter.blocked.wait(5.0)
        sent = time.monotonic()
        job_id = enqueue_one(store, new_job(queue="cw"))
        wait_for(lambda: waiter.jobs)
        assert time.monotonic() - sent < 2.0
        (job,) = waiter.jobs
        assert job.id == job_id and job.attempt == 1
        stored = get(store, job_id)
        assert stored.state == JobState.RUNNING and stored.worker == "w"
        assert succeed(store, job)
    finally:
        waiter.close()


def test_waiting_workers_get_no_more_than_their_free_slots(store: Store, url: str) -> None:
    waiter = Waiter(url, "w", "cw", 2)
    try:
        assert waiter.blocked.wait(5.0)
        store.enqueue([new_job(i, queue="cw") for i in range(5)])
        wait_for(lambda: len(waiter.jobs) == 2)
        assert len(claim(store, ["cw"], limit=10, worker="other")) == 3
        assert len(waiter.jobs) == 2
    finally:
        waiter.close()


def test_jobs_reach_a_waiting_worker_in_claim_order(store: Store, url: str) -> None:
    """A waiting worker gets what a claim would take first: the higher priority,
    then the older job."""
    waiter = Waiter(url, "w", "cw", 1)
    try:
        assert waiter.blocked.wait(5.0)
        low, high, later = (new_job(i, queue="cw", priority=p) for i, p in enumerate((0, 5, 5)))
        store.enqueue([low, high, later])
        wait_for(lambda: waiter.jobs)
        assert [j.id for j in waiter.jobs] == [high.id]
        assert claim_one(store, "cw", worker="other").id == later.id
        assert claim_one(store, "cw", worker="other").id == low.id
    finally:
        waiter.close()


def test_each_job_sent_to_several_waiters_is_claimed_once(store: Store, url: str) -> None:
    waiters = [Waiter(url, f"w{i}", "cw", 40) for i in range(3)]
    try:
        for waiter in waiters:
            assert waiter.blocked.wait(5.0)
        sent = []
        for i in range(40):
            sent.append(enqueue_one(store, new_job(i, queue="cw")))
            if i % 10 == 0:
                store.enqueue([new_job(i, j, queue="cw") for j in range(5)])
        total = lambda: sum(len(w.jobs) for w in waiters)  # noqa: E731
        wait_for(lambda: total() == 60)
        claimed = Counter(j.id for w in waiters for j in w.jobs)
        assert set(sent) <= set(claimed) and max(claimed.values()) == 1
        for waiter in waiters:
            for job in waiter.jobs:
                assert get(store, job.id).worker == waiter.worker
    finally:
        for waiter in waiters:
            waiter.close()


def test_a_waiting_worker_gets_no_job_its_limit_blocks(store: Store, url: str) -> None:
    key = (ConcurrencyKey("site", 1),)
    enqueue_one(store, new_job(queue="cw", concurrency=key))
    (holder,) = claim(store, ["cw"], worker="other")
    waiter = Waiter(url, "w", "cw", 4)
    try:
        assert waiter.blocked.wait(5.0)
        blocked_id = enqueue_one(store, new_job(queue="cw", concurrency=key))
        free_id = enqueue_one(store, new_job(queue="cw"))
        wait_for(lambda: waiter.jobs)
        assert [j.id for j in waiter.jobs] == [free_id]
        assert get(store, blocked_id).state == JobState.QUEUED
        assert succeed(store, holder)
        wait_for(lambda: len(waiter.jobs) == 2)
        assert waiter.jobs[1].id == blocked_id
    finally:
        waiter.close()


def _holds_only(waiter: Waiter, store: Store, sent: list[str]) -> None:
    """The waiter holds exactly one of the jobs ``sent`` (the one their limit
    lets through) through two whole waits; the others stay queued."""
    wait_for(lambda: waiter.jobs)
    rounds = waiter.rounds
    wait_for(lambda: waiter.rounds >= rounds + 2)  # two whole waits since
    (taken,) = waiter.jobs
    assert taken.id in sent
    states = {job_id: get(store, job_id).state for job_id in sent if job_id != taken.id}
    assert set(states.values()) == {JobState.QUEUED}


def test_a_waiting_worker_gets_only_the_one_job_a_rate_limit_lets_through(
    store: Store, url: str
) -> None:
    waiter = Waiter(url, "w", "cw", 4)
    try:
        assert waiter.blocked.wait(5.0)
        rate = (RateKey("site", 0.001, 1),)
        sent = [r.id for r in store.enqueue([new_job(i, queue="cw", rate=rate) for i in range(3)])]
        _holds_only(waiter, store, sent)
        assert waiter.jobs[0].id == sent[0]
    finally:
        waiter.close()


def test_a_waiting_worker_gets_only_the_probe_of_a_half_open_breaker(
    store: Store, url: str
) -> None:
    breaker = (BreakerKey("api", 1, 3.0),)
    enqueue_one(store, new_job("failing", queue="cw", breaker=breaker))
    assert fail(store, claim_one(store, "cw", worker="other"))  # the breaker opens
    open_until = {info.key: info for info in store.limits()}["api"].open_until
    assert open_until is not None
    waiter = Waiter(url, "w", "cw", 4)
    try:
        assert waiter.blocked.wait(5.0)
        rounds = waiter.rounds
        sent = [enqueue_one(store, new_job(i, queue="cw", breaker=breaker)) for i in range(3)]
        wait_for(lambda: waiter.rounds >= rounds + 2)  # a whole wait began after the sends
        assert store.now() < open_until, "(the check came after the cooldown)"
        assert waiter.jobs == [], "a job taken while the breaker is open"
        wait_until(store, open_until)
        _holds_only(waiter, store, sent)  # one probe at a time
    finally:
        waiter.close()


def test_a_slot_freed_by_the_waiters_own_process_reaches_it_promptly(store: Store) -> None:
    """A worker reports a job of a full key, and its claimer, waiting on the
    same store (long past the report), takes the job that waited for the slot
    at once."""
    key = (ConcurrencyKey("site", 1),)
    enqueue_one(store, new_job(queue="cw", concurrency=key))
    (holder,) = claim(store, ["cw"], worker="w")
    blocked_id = enqueue_one(store, new_job(queue="cw", concurrency=key))
    got: list[ClaimedJob] = []
    started = threading.Event()

    def claimer() -> None:
        started.set()
        deadline = time.monotonic() + 20.0  # (a wait may end early without work)
        while not got and time.monotonic() < deadline:
            got.extend(claim_or_wait(store, "w", ["cw"], 4, 10.0))

    thread = threading.Thread(target=claimer, daemon=True)
    thread.start()
    try:
        assert started.wait(5.0)
        freed = time.monotonic()
        assert succeed(store, holder)
        wait_for(lambda: got, timeout=15.0, what="the job the slot was freed for")
        assert time.monotonic() - freed < 1.0
        assert [j.id for j in got] == [blocked_id]
    finally:
        thread.join(25.0)
        stop_waiting(store, "w")


def test_a_paused_queue_gives_waiting_workers_nothing(store: Store, url: str) -> None:
    store.pause_queue("cw")
    waiter = Waiter(url, "w", "cw", 4)
    try:
        assert waiter.blocked.wait(5.0)
        job_id = enqueue_one(store, new_job(queue="cw"))
        rounds = waiter.rounds
        wait_for(lambda: waiter.rounds >= rounds + 2)  # a whole wait began after the send
        assert waiter.jobs == [] and get(store, job_id).state == JobState.QUEUED
        store.resume_queue("cw")
        wait_for(lambda: waiter.jobs)
        assert waiter.jobs[0].id == job_id
    finally:
        waiter.close()


def test_a_send_reusing_a_stored_id_changes_nothing_for_a_waiting_worker(
    store: Store, url: str
) -> None:
    """Bad input (guarantee 7) on the way to a waiting worker: the send is
    refused, the stored job stays as it was, and the worker gets nothing."""
    stored = enqueue_one(store, new_job("old", queue="other"))
    waiter = Waiter(url, "w", "cw", 4)
    try:
        assert waiter.blocked.wait(5.0)
        rounds = waiter.rounds
        with pytest.raises(InvalidArgument):
            store.enqueue([new_job("clash", queue="cw", job_id=stored)])
        wait_for(lambda: waiter.rounds >= rounds + 2)  # a whole wait began after the send
        assert waiter.jobs == []
        job = get(store, stored)
        assert (job.queue, job.args, job.state) == ("other", ["old"], JobState.QUEUED)
    finally:
        waiter.close()


def test_stop_waiting_leaves_a_worker_that_never_waited_alone(store: Store) -> None:
    job_id = enqueue_one(store, new_job())
    stop_waiting(store, "w")
    assert claim(store)[0].id == job_id


def test_a_job_got_through_claim_or_wait_is_leased_like_any_claim(store: Store, url: str) -> None:
    """Guarantee 2 through claim_or_wait: the waiter dies without finishing, the
    lease expires, the job goes back with a lost attempt, and the dead
    waiter's late finish is refused."""
    waiter = Waiter(url, "doomed", "cw", 1)
    try:
        assert waiter.blocked.wait(5.0)
        job_id = enqueue_one(store, new_job(queue="cw", lease=0.3, max_lost=3))
        wait_for(lambda: waiter.jobs)
    finally:
        waiter.stop.set()
        waiter.thread.join(10)
        waiter.store.close()  # gone without a word: no remove_worker
    (dead,) = waiter.jobs
    wait_expired(store, job_id)
    assert store.recover() == [job_id]
    job = get(store, job_id)
    assert job.state is JobState.QUEUED and job.lost == 1
    assert not succeed(store, dead)
    again = claim_one(store, "cw", worker="healthy")
    assert again.id == job_id and again.token != dead.token
