"""Claim order and selection: priorities, FIFO, pause/resume, queues, limits, races."""

from __future__ import annotations

import threading
import time
from collections import Counter

from conformance.support import (
    claim,
    claim_one,
    enqueue_one,
    get,
    new_job,
    open_stores,
    run_threads,
    succeed,
)
from rota.models import ConcurrencyKey, JobState, Outcome
from rota.stores import Store


def drain_one_by_one(store: Store, queues: tuple[str, ...] = ("default",)) -> list[str]:
    """Claim jobs one at a time until none is left; return their ids in claim order."""
    order: list[str] = []
    for _ in range(10_000):
        claimed = claim(store, queues)
        if not claimed:
            return order
        order.append(claimed[0].id)
    raise AssertionError("queue never drained")


def test_higher_priority_is_claimed_first(store: Store) -> None:
    low = enqueue_one(store, new_job("low", priority=0))
    high = enqueue_one(store, new_job("high", priority=10))
    mid = enqueue_one(store, new_job("mid", priority=5))
    negative = enqueue_one(store, new_job("negative", priority=-3))
    also_high = enqueue_one(store, new_job("also high", priority=10))
    assert drain_one_by_one(store) == [high, also_high, mid, low, negative]


def test_fifo_within_a_priority(store: Store) -> None:
    ids = [enqueue_one(store, new_job(i)) for i in range(20)]
    assert drain_one_by_one(store) == ids


def test_fifo_within_a_priority_across_batches(store: Store) -> None:
    first = store.enqueue([new_job(i) for i in range(10)])
    second = store.enqueue([new_job(i) for i in range(10, 20)])
    assert drain_one_by_one(store) == [r.id for r in first + second]


def test_a_batch_claim_takes_the_head_of_the_queue(store: Store) -> None:
    ids = [enqueue_one(store, new_job(i, priority=i % 3)) for i in range(30)]
    top = {job_id for i, job_id in enumerate(ids) if i % 3 == 2}
    assert {c.id for c in claim(store, limit=10)} == top


def test_a_batch_claim_returns_its_jobs_best_first(store: Store) -> None:
    # A worker runs the jobs of a batch in the order the claim returns them.
    priorities = [0, 5, -5, 10, 0, 5, 1, 2, 3]
    ids = [enqueue_one(store, new_job(p, priority=p)) for p in priorities]
    best_first = sorted(range(len(ids)), key=lambda i: -priorities[i])
    assert [c.id for c in claim(store, limit=len(ids))] == [ids[i] for i in best_first]


def test_a_batch_claim_returns_its_fairness_keys_round_robin(store: Store) -> None:
    # Sent together, key A's jobs get vtimes 1..4, B's 1..2 and C's 1..3: claims
    # serve A B C A B C A A, after the one job of higher priority.
    labels = ["A0", "A1", "A2", "A3", "B0", "B1", "C0", "C1", "C2"]
    sent = [
        new_job(label, concurrency=(ConcurrencyKey(label[0], 100),), priority=int(label == "C2"))
        for label in labels
    ]
    ids = dict(zip(labels, [r.id for r in store.enqueue(sent)], strict=True))
    claimed = [c.id for c in claim(store, limit=len(sent))]
    expected = ["C2", "A0", "B0", "C0", "A1", "B1", "C1", "A2", "A3"]
    assert claimed == [ids[label] for label in expected]


def test_claims_only_from_the_queues_asked(store: Store) -> None:
    a = enqueue_one(store, new_job(queue="a"))
    b = enqueue_one(store, new_job(queue="b"))
    c = enqueue_one(store, new_job(queue="c"))
    assert claim(store, ["missing"]) == []
    assert claim(store, []) == []
    assert [j.id for j in claim(store, ["b"], limit=5)] == [b]
    assert {j.id for j in claim(store, ["a", "c", "x"], limit=5)} == {a, c}
    assert claim(store, ["a", "b", "c"], limit=5) == []


def test_priority_applies_across_the_queues_asked(store: Store) -> None:
    low = enqueue_one(store, new_job(queue="a", priority=1))
    high = enqueue_one(store, new_job(queue="b", priority=9))
    assert drain_one_by_one(store, ("a", "b")) == [high, low]


def test_claim_limit_is_respected(store: Store) -> None:
    store.enqueue([new_job(i) for i in range(20)])
    assert len(claim(store, limit=7)) == 7
    assert len(claim(store, limit=1)) == 1
    assert claim(store, limit=0) == []
    assert len(claim(store, limit=100)) == 12
    assert claim(store, limit=100) == []


def test_claim_limit_holds_over_several_queues(store: Store) -> None:
    for queue in ("a", "b", "c"):
        store.enqueue([new_job(i, queue=queue) for i in range(5)])
    claimed = claim(store, ["a", "b", "c"], limit=4)
    assert len(claimed) == 4
    assert len({c.id for c in claimed}) == 4
    running = sum(q.counts.get(JobState.RUNNING, 0) for q in store.queues())
    assert running == 4


def test_paused_queue_accepts_but_is_not_claimed(store: Store) -> None:
    before = enqueue_one(store, new_job(queue="paused"))
    store.pause_queue("paused")
    after = enqueue_one(store, new_job(queue="paused"))
    other = enqueue_one(store, new_job(queue="other"))

    assert get(store, after).state is JobState.QUEUED
    assert claim(store, ["paused"], limit=5) == []
    assert [j.id for j in claim(store, ["paused", "other"], limit=5)] == [other]
    info = {q.name: q for q in store.queues()}
    assert info["paused"].paused
    assert not info["other"].paused
    assert info["paused"].counts == {JobState.QUEUED: 2}

    store.resume_queue("paused")
    assert not {q.name: q for q in store.queues()}["paused"].paused
    assert {j.id for j in claim(store, ["paused"], limit=5)} == {before, after}


def test_pausing_a_queue_that_has_no_jobs_yet(store: Store) -> None:
    store.pause_queue("later")
    assert [(q.name, q.paused) for q in store.queues()] == [("later", True)]
    job_id = enqueue_one(store, new_job(queue="later"))
    assert claim(store, ["later"]) == []
    store.resume_queue("later")
    assert claim_one(store, "later").id == job_id


def test_paused_queue_holds_due_delayed_jobs(store: Store) -> None:
    store.pause_queue("q")
    enqueue_one(store, new_job(queue="q", run_at=store.now() - 1))
    assert claim(store, ["q"]) == []
    store.resume_queue("q")
    assert len(claim(store, ["q"])) == 1


def test_concurrent_claims_never_share_a_job(url: str) -> None:
    total, threads = 2_000, 4
    with open_stores(url, threads + 1) as stores:
        producer, workers = stores[0], stores[1:]
        ids: list[str] = []
        for start in range(0, total, 500):
            batch = [new_job(i, lease=60.0) for i in range(start, start + 500)]
            ids += [r.id for r in producer.enqueue(batch)]

        seen: list[list[str]] = [[] for _ in range(threads)]
        deadline = time.monotonic() + 60.0

        def work(index: int) -> int:
            store = workers[index]
            idle = 0
            while idle < 3 and time.monotonic() < deadline:
                claimed = store.claim(f"w-{index}", ["default"], 25)
                if not claimed:
                    idle += 1
                    time.sleep(0.01)
                    continue
                idle = 0
                seen[index] += [c.id for c in claimed]
                outcomes = [Outcome(c.id, c.token, ok=True, result=b"1") for c in claimed]
                assert store.finish(outcomes) == [True] * len(claimed)
            return len(seen[index])

        counts = run_threads(threads, work, timeout=90.0)

        claimed_ids = Counter(i for part in seen for i in part)
        assert sum(counts) == total
        assert set(claimed_ids) == set(ids)
        assert max(claimed_ids.values()) == 1
        info = {q.name: q.counts for q in producer.queues()}
        assert info == {"default": {JobState.SUCCEEDED: total}}


def test_concurrent_claims_on_one_store_instance(store: Store) -> None:
    total, threads = 300, 4
    store.enqueue([new_job(i, lease=60.0) for i in range(total)])
    lock = threading.Lock()
    seen: Counter[str] = Counter()

    def work(index: int) -> None:
        for _ in range(1_000):
            claimed = store.claim(f"w-{index}", ["default"], 5)
            if not claimed:
                return
            with lock:
                seen.update(c.id for c in claimed)
            for c in claimed:
                assert succeed(store, c)

    run_threads(threads, work)
    assert len(seen) == total
    assert max(seen.values()) == 1
