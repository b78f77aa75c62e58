"""Retention drops per-key state that carries nothing a key never seen would
not: idle limit keys, fair keys the queue's clock has passed, and hosts no
worker has served a queue from for a day. What operators set, what is open
and what is in use stays."""

from __future__ import annotations

import time

from conformance.raw import age_host, fair_keys, hosts_seen
from conformance.support import (
    claim,
    claim_one,
    enqueue_one,
    fail,
    new_job,
    succeed,
    succeed_all,
    worker_info,
)
from rota.models import BreakerKey, ConcurrencyKey, HostScope, NewJob, RateKey
from rota.stores import Store

_DAY = 86400.0


def polite(host: str, *args: object, rate: float = 1000.0) -> NewJob:
    """A crawl job: at most 2 running per host, ``rate`` starts a second, burst 1."""
    return new_job(
        host,
        *args,
        concurrency=(ConcurrencyKey(host, 2),),
        rate=(RateKey(host, rate, 1),),
        lease=30.0,
    )


def listed(store: Store) -> set[str]:
    return {info.key for info in store.limits()}


def test_idle_limit_keys_are_dropped(store: Store) -> None:
    hosts = [f"site-{i}.example" for i in range(40)]
    store.enqueue([polite(host) for host in hosts])
    succeed_all(store)
    assert set(hosts) <= listed(store)
    time.sleep(0.01)  # every bucket (1000/s, burst 1) is full again

    store.purge_finished(0.0)
    assert listed(store).isdisjoint(hosts)


def test_a_dropped_key_starts_again_as_a_new_one(store: Store) -> None:
    store.enqueue([polite("again.example")])
    succeed_all(store)
    time.sleep(0.01)
    store.purge_finished(0.0)
    assert "again.example" not in listed(store)

    store.enqueue([polite("again.example", i) for i in range(3)])
    first = claim(store, limit=10)
    assert len(first) == 1  # burst 1
    time.sleep(0.01)
    assert len(claim(store, limit=10)) == 1
    time.sleep(0.01)
    assert claim(store, limit=10) == []  # 2 running: the limit holds
    info = {i.key: i for i in store.limits()}["again.example"]
    assert (info.running, info.concurrency) == (2, 2)


def test_keys_that_carry_something_stay(store: Store) -> None:
    store.set_limit("overridden", 3)
    store.set_rate("paced", 2.0)
    enqueue_one(store, new_job("open", breaker=(BreakerKey("open", 1, 600.0),)))
    assert fail(store, claim_one(store))
    enqueue_one(store, new_job("counting", breaker=(BreakerKey("counting", 3, 600.0),)))
    assert fail(store, claim_one(store))
    enqueue_one(store, polite("running.example"))
    running = claim_one(store)
    # a pending job behind a bucket that is not full again
    store.enqueue([polite("slow.example", i, rate=0.001) for i in range(2)])
    succeed_all(store)
    enqueue_one(store, polite("idle.example"))
    succeed_all(store)
    time.sleep(0.01)

    store.purge_finished(0.0)
    kept = {"overridden", "paced", "open", "counting", "running.example", "slow.example"}
    assert kept <= listed(store)
    assert "idle.example" not in listed(store)

    # cleared, closed, finished: they go too
    store.set_limit("overridden", None)
    store.set_rate("paced", None)
    assert store.reset_breaker("open")
    assert succeed(store, running)
    time.sleep(0.01)
    store.purge_finished(0.0)
    assert listed(store).isdisjoint({"overridden", "paced", "open", "running.example"})
    assert {"counting", "slow.example"} <= listed(store)


def test_fair_keys_the_queue_clock_passed_are_dropped(store: Store) -> None:
    done = [f"done-{i}.example" for i in range(20)]
    store.enqueue([polite(host) for host in done])
    succeed_all(store)
    enqueue_one(store, polite("pending.example", rate=0.001))
    assert set(done) <= fair_keys(store, "default")

    store.purge_finished(0.0)
    assert fair_keys(store, "default") == {"pending.example"}


def test_a_new_job_of_a_dropped_fair_key_is_not_served_late(store: Store) -> None:
    def on(host: str, i: object) -> NewJob:
        return new_job(host, i, concurrency=(ConcurrencyKey(host, 10_000),), lease=30.0)

    store.enqueue([on("old.example", i) for i in range(5)])
    succeed_all(store)
    store.purge_finished(0.0)
    assert "old.example" not in fair_keys(store, "default")
    store.enqueue([on("big.example", i) for i in range(300)])
    claim(store, limit=20)
    late = enqueue_one(store, on("old.example", "late"))
    assert late in {job.id for job in claim(store, limit=10)}


def test_hosts_silent_for_a_day_are_dropped(store: Store) -> None:
    enqueue_one(store, new_job("first"))  # the queue is one the store knows
    assert succeed(store, claim_one(store))
    for host in ("gone-pod", "live-pod"):
        store.heartbeat(worker_info(f"worker-of-{host}", host=host, queues=("default",)))
    age_host(store, "gone-pod", "default", _DAY + 60.0)

    store.purge_finished(0.0)
    assert hosts_seen(store, "default") == {"live-pod"}

    # a job sent to the gone host still goes to any worker after the grace
    job_id = enqueue_one(store, new_job(host="gone-pod"))
    live = HostScope("live-pod", grace=0.3)
    assert store.claim("worker-of-live-pod", ["default"], 1, live) == []
    deadline = time.monotonic() + 5.0
    while not (claimed := store.claim("worker-of-live-pod", ["default"], 1, live)):
        assert time.monotonic() < deadline, "the gone host's job was never released"
        time.sleep(0.02)
    assert [job.id for job in claimed] == [job_id]
