"""Guarantee 5: concurrency, rate and breaker limits hold cluster-wide; fairness."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import orjson
import pytest

from conformance.support import (
    claim,
    claim_one,
    enqueue_one,
    fail,
    get,
    job_ids,
    lease,
    new_job,
    open_stores,
    run_threads,
    succeed,
    wait_expired,
    wait_until,
)
from rota.models import (
    BreakerKey,
    ClaimedJob,
    ConcurrencyKey,
    JobQuery,
    JobState,
    LimitInfo,
    NewJob,
    RateKey,
)
from rota.stores import Store


def limited(*args: object, key: str = "spiders", limit: int = 1, **fields: Any) -> NewJob:
    """A job carrying one concurrency key."""
    fields.setdefault("lease", 30.0)
    return new_job(*args, concurrency=(ConcurrencyKey(key, limit),), **fields)


def limit_info(store: Store, key: str) -> LimitInfo:
    found = {info.key: info for info in store.limits()}
    assert key in found, f"limits() does not list {key!r}: {sorted(found)}"
    return found[key]


def first_arg(job: ClaimedJob) -> object:
    return orjson.loads(job.payload)["args"][0]


# -- concurrency -----------------------------------------------------------------


def test_one_claim_takes_no_more_than_the_limit(store: Store) -> None:
    store.enqueue([limited(i, limit=3) for i in range(10)])
    assert len(claim(store, limit=10)) == 3
    assert claim(store, limit=10) == []
    info = limit_info(store, "spiders")
    assert (info.running, info.concurrency) == (3, 3)
    assert len(job_ids(store, JobQuery(state=JobState.QUEUED))) == 7


def test_concurrency_limit_holds_across_store_instances(url: str) -> None:
    limit, total, threads = 2, 40, 4
    with open_stores(url, threads + 1) as stores:
        producer, workers = stores[0], stores[1:]
        producer.enqueue([limited("spiders", i, limit=limit) for i in range(total)])
        producer.enqueue([new_job("free", i, lease=30.0) for i in range(total)])
        lock = threading.Lock()
        holding = {"now": 0, "max": 0, "seen_running": 0}
        done: Counter[str] = Counter()
        deadline = time.monotonic() + 60.0

        def work(index: int) -> None:
            store = workers[index]
            while time.monotonic() < deadline:
                with lock:
                    if len(done) == 2 * total:
                        return
                claimed = store.claim(f"w-{index}", ["default"], 3)
                keyed = sum(1 for c in claimed if first_arg(c) == "spiders")
                with lock:
                    holding["now"] += keyed
                    holding["max"] = max(holding["max"], holding["now"])
                running = store.list_jobs(JobQuery(state=JobState.RUNNING), limit=1000).jobs
                seen = sum(1 for job in running if "spiders" in job.limit_keys)
                with lock:
                    holding["seen_running"] = max(holding["seen_running"], seen)
                if not claimed:
                    time.sleep(0.002)
                    continue
                time.sleep(0.002)
                with lock:
                    holding["now"] -= keyed
                    done.update(c.id for c in claimed)
                for job in claimed:
                    assert succeed(store, job)

        run_threads(threads, work, timeout=90.0)
        assert holding["max"] <= limit
        assert holding["seen_running"] <= limit
        assert holding["max"] >= 1
        assert len(done) == 2 * total
        assert max(done.values()) == 1
        assert limit_info(producer, "spiders").running == 0


@pytest.mark.parametrize("how", ["succeed", "fail", "retry", "release", "recover"])
def test_slot_is_released_when_the_job_stops_running(store: Store, how: str) -> None:
    lease_s = 0.3 if how == "recover" else 30.0
    first = enqueue_one(store, limited("first", lease=lease_s, max_attempts=2))
    second = enqueue_one(store, limited("second", lease=lease_s, max_attempts=2))
    claimed = claim_one(store)
    assert claimed.id == first
    assert claim(store, limit=5) == []
    assert limit_info(store, "spiders").running == 1

    def recover() -> bool:
        wait_expired(store, first)
        return store.recover() == [first]

    actions: dict[str, Callable[[], bool]] = {
        "succeed": lambda: succeed(store, claimed),
        "fail": lambda: fail(store, claimed),
        "retry": lambda: fail(store, claimed, retry_in=0.0),
        "release": lambda: store.release([lease(claimed)]) == [True],
        "recover": recover,
    }
    assert actions[how]()
    assert limit_info(store, "spiders").running == 0
    after = claim(store, limit=5)
    assert len(after) == 1
    assert after[0].id in (first, second)
    assert limit_info(store, "spiders").running == 1


def test_limit_can_be_overridden_at_run_time(store: Store) -> None:
    store.enqueue([limited(i, limit=1) for i in range(6)])
    first = claim(store, limit=6)
    assert len(first) == 1

    store.set_limit("spiders", 3)
    assert limit_info(store, "spiders").override == 3
    assert limit_info(store, "spiders").concurrency == 3
    more = claim(store, limit=6)
    assert len(more) == 2
    assert claim(store, limit=6) == []

    store.set_limit("spiders", None)  # back to the declared limit of 1
    assert limit_info(store, "spiders").override is None
    assert claim(store, limit=6) == []
    for job in first + more:
        assert succeed(store, job)
    assert len(claim(store, limit=6)) == 1


@pytest.mark.parametrize("verb", ["set_limit", "set_rate"])
def test_clearing_the_override_of_an_unknown_key_writes_nothing(store: Store, verb: str) -> None:
    store.enqueue([limited(0, limit=1)])
    (job,) = claim(store, limit=1)  # "spiders" is known from now on
    before = store.limits()
    assert getattr(store, verb)("nope", None) is False
    assert store.limits() == before
    assert getattr(store, verb)("spiders", None) is True, "known, with no override: fine"
    assert store.limits() == before
    assert getattr(store, verb)("new", 2) is True, "setting one makes the key known"
    assert "new" in {info.key for info in store.limits()}
    assert getattr(store, verb)("new", None) is True
    assert succeed(store, job)


def test_limit_override_of_zero_stops_the_key(store: Store) -> None:
    store.set_limit("spiders", 0)
    store.enqueue([limited(i, limit=5) for i in range(3)])
    other = enqueue_one(store, new_job("free"))
    assert [c.id for c in claim(store, limit=5)] == [other]
    store.set_limit("spiders", None)
    assert len(claim(store, limit=5)) == 3


def test_blocked_jobs_stay_queued_and_others_pass(store: Store) -> None:
    blocked = [r.id for r in store.enqueue([limited(i, key="slow") for i in range(5)])]
    fast = [r.id for r in store.enqueue([limited(i, key="fast", limit=10) for i in range(3)])]
    plain = [r.id for r in store.enqueue([new_job(i) for i in range(2)])]

    claimed = {c.id for c in claim(store, limit=20)}
    assert claimed >= set(fast + plain)
    assert len(claimed & set(blocked)) == 1
    for job_id in set(blocked) - claimed:
        job = get(store, job_id)
        assert (job.state, job.attempt, job.error) == (JobState.QUEUED, 0, None)
    assert claim(store, limit=20) == []


def test_jobs_behind_many_blocked_jobs_of_one_group_are_claimed(store: Store) -> None:
    """A crawl task limited per host and globally: a big backlog of a blocked
    host must not hold up another host's job behind it."""

    def fetch(host: str, i: int) -> NewJob:
        keys = (ConcurrencyKey("spiders", 100), ConcurrencyKey(host, 1))
        return new_job(host, i, concurrency=keys, lease=30.0)

    store.enqueue([fetch("big.example", i) for i in range(2_000)])
    other = enqueue_one(store, fetch("small.example", 0))
    first = claim_one(store)
    assert first_arg(first) == "big.example"
    second = claim(store, limit=1)
    assert [c.id for c in second] == [other]


def test_claim_over_several_queues_takes_slots_only_for_returned_jobs(store: Store) -> None:
    for queue in ("a", "b", "c"):
        enqueue_one(store, limited(queue, queue=queue, limit=2))
    first = claim(store, ["a", "b", "c"], limit=1)
    assert len(first) == 1
    assert limit_info(store, "spiders").running == 1
    second = claim(store, ["a", "b", "c"], limit=1)
    assert len(second) == 1
    assert limit_info(store, "spiders").running == 2
    assert claim(store, ["a", "b", "c"], limit=1) == []
    assert succeed(store, first[0])
    assert len(claim(store, ["a", "b", "c"], limit=1)) == 1


def test_claim_over_several_queues_takes_tokens_only_for_returned_jobs(store: Store) -> None:
    for queue in ("a", "b", "c"):
        enqueue_one(store, new_job(queue, queue=queue, rate=(RateKey("site", 0.01, 2),)))
    assert len(claim(store, ["a", "b", "c"], limit=1)) == 1
    assert len(claim(store, ["a", "b", "c"], limit=1)) == 1  # the burst's second token
    assert claim(store, ["a", "b", "c"], limit=1) == []


def test_limits_lists_keys_with_running_counts(store: Store) -> None:
    store.enqueue([limited(i, key="spiders", limit=5) for i in range(3)])
    store.enqueue([new_job(i, rate=(RateKey("example.com", 2.0, 4),)) for i in range(2)])
    claimed = claim(store, limit=10)
    assert len(claimed) == 5

    spiders = limit_info(store, "spiders")
    assert (spiders.running, spiders.concurrency) == (3, 5)
    rate = limit_info(store, "example.com")
    assert (rate.rate, rate.burst) == (2.0, 4)
    assert rate.tokens is not None
    assert 1.9 <= rate.tokens <= 4.0

    for job in claimed:
        assert succeed(store, job)
    assert limit_info(store, "spiders").running == 0


# -- rate limits -----------------------------------------------------------------


def test_rate_can_be_overridden_at_run_time(store: Store) -> None:
    store.enqueue([new_job(i, rate=(RateKey("site", 1000.0, 2),)) for i in range(20)])
    store.set_rate("site", 0.001)  # the burst now, then nothing for a long while
    assert len(claim(store, limit=20)) == 2
    assert claim(store, limit=20) == []
    info = limit_info(store, "site")
    assert (info.rate, info.burst, info.rate_override) == (1000.0, 2, 0.001)
    assert info.rate_in_force == 0.001
    assert info.tokens is not None and info.tokens < 0.1

    store.set_rate("site", None)  # the jobs' own 1,000 a second again
    assert limit_info(store, "site").rate_override is None
    start = store.now()
    wait_until(store, start + 0.01)
    assert len(claim(store, limit=20)) == 2  # the bucket refilled to its burst


def test_lowering_a_rate_keeps_the_tokens_its_bucket_has_banked(store: Store) -> None:
    """The time since the bucket's last take is credited at the rate it had:
    a bucket full at 10 a second stays full when the rate drops to one an
    hour, rather than count its idle time at the new rate."""
    store.enqueue([new_job(i, rate=(RateKey("site", 10.0, 2),)) for i in range(5)])
    assert len(claim(store, limit=1)) == 1  # one of the two tokens taken
    wait_until(store, store.now() + 0.2)  # the bucket full again, at 10 a second
    store.set_rate("site", 1 / 3600)
    assert len(claim(store, limit=5)) == 2
    assert claim(store, limit=5) == []


def test_a_rate_override_may_raise_the_rate(store: Store) -> None:
    store.enqueue([new_job(i, rate=(RateKey("site", 0.001, 1),)) for i in range(5)])
    assert len(claim(store, limit=5)) == 1
    assert claim(store, limit=5) == []
    store.set_rate("site", 1000.0)
    wait_until(store, store.now() + 0.01)
    assert len(claim(store, limit=5)) == 1
    assert limit_info(store, "site").rate_in_force == 1000.0


def test_rate_limit_bounds_starts_over_a_window(url: str) -> None:
    rate, burst, window = 5.0, 5, 1.2
    with open_stores(url, 2) as stores:
        stores[0].enqueue([new_job(i, rate=(RateKey("site", rate, burst),)) for i in range(100)])
        start = stores[0].now()
        first = claim(stores[0], limit=50)
        assert len(first) == burst  # a fresh bucket is full, then empty
        count = len(first)
        turn = 0
        while stores[0].now() < start + window:
            turn += 1
            count += len(claim(stores[turn % 2], limit=50))
            time.sleep(0.02)
        elapsed = stores[0].now() - start
        assert count <= rate * elapsed + burst
        assert count > burst  # tokens refill over time


def test_rate_limit_is_shared_by_store_instances(url: str) -> None:
    with open_stores(url, 3) as stores:
        jobs = [new_job(i, rate=(RateKey("site", 0.5, 3),)) for i in range(10)]
        stores[0].enqueue(jobs)
        got = [len(claim(s, limit=10)) for s in stores]
        assert sum(got) == 3
        assert got[0] == 3


def test_a_burst_is_taken_once_by_claims_racing_on_many_store_instances(url: str) -> None:
    """Eight machines claim at once, each several times, from a bucket of
    three that barely refills: three jobs start in all."""
    with open_stores(url, 8) as stores:
        stores[0].enqueue([new_job(i, rate=(RateKey("site", 0.001, 3),)) for i in range(40)])

        def claims(index: int) -> list[str]:
            got: list[str] = []
            for _ in range(5):
                got += [job.id for job in claim(stores[index], limit=2, worker=f"w-{index}")]
            return got

        claimed = [job_id for got in run_threads(len(stores), claims) for job_id in got]
        assert len(claimed) == 3 == len(set(claimed))
        assert len(job_ids(stores[0], JobQuery(state=JobState.QUEUED))) == 37


def test_claims_racing_on_many_store_instances_keep_to_the_rate(url: str) -> None:
    rate, burst, window = 5.0, 3, 1.5
    with open_stores(url, 8) as stores:
        stores[0].enqueue([new_job(i, rate=(RateKey("site", rate, burst),)) for i in range(100)])
        start = stores[0].now()

        def claims(index: int) -> list[str]:
            got: list[str] = []
            while stores[index].now() < start + window:
                got += [job.id for job in claim(stores[index], limit=3, worker=f"w-{index}")]
                time.sleep(0.005)
            return got

        claimed = [job_id for got in run_threads(len(stores), claims) for job_id in got]
        elapsed = stores[0].now() - start
        assert len(claimed) == len(set(claimed))
        assert len(claimed) <= rate * elapsed + burst
        assert len(claimed) > burst  # the bucket refilled meanwhile


def test_rate_limited_jobs_do_not_block_other_keys(store: Store) -> None:
    store.enqueue([new_job(i, rate=(RateKey("slow.example", 0.1, 1),)) for i in range(5)])
    free = [r.id for r in store.enqueue([new_job(i) for i in range(3)])]
    claimed = {c.id for c in claim(store, limit=10)}
    assert len(claimed) == 4
    assert claimed >= set(free)
    assert len(job_ids(store, JobQuery(state=JobState.QUEUED))) == 4


# -- circuit breakers ------------------------------------------------------------


def breaker_job(
    *args: object, key: str = "api", failures: int = 2, cooldown: float = 0.4
) -> NewJob:
    return new_job(*args, breaker=(BreakerKey(key, failures, cooldown),), lease=30.0)


def open_breaker(store: Store, failures: int = 2, cooldown: float = 0.4) -> float:
    """Fail ``failures`` jobs in a row; return the breaker's ``open_until``."""
    for i in range(failures):
        enqueue_one(store, breaker_job(f"failing-{i}", failures=failures, cooldown=cooldown))
        before = {info.key: info for info in store.limits()}.get("api")
        assert before is None or before.open_until is None
        assert fail(store, claim_one(store))
    info = limit_info(store, "api")
    assert info.open_until is not None
    assert info.failures >= failures
    return info.open_until


def test_breaker_opens_blocks_probes_and_closes(store: Store) -> None:
    open_until = open_breaker(store)
    waiting = [r.id for r in store.enqueue([breaker_job(i) for i in range(4)])]
    others = [r.id for r in store.enqueue([new_job(i) for i in range(2)])]

    # open: jobs with the key stay queued, jobs behind them with other keys run
    assert {c.id for c in claim(store, limit=10)} == set(others)
    assert {get(store, i).state for i in waiting} == {JobState.QUEUED}
    assert claim(store, limit=10) == []

    # half-open after the cooldown: one probe at a time
    wait_until(store, open_until)
    probe = claim(store, limit=10)
    assert len(probe) == 1
    assert probe[0].id in waiting
    assert claim(store, limit=10) == []

    # the probe succeeds: closed, as many start as its threshold (2 of the 3 left)
    assert succeed(store, probe[0])
    info = limit_info(store, "api")
    assert (info.failures, info.open_until) == (0, None)
    assert len(claim(store, limit=10)) == 2


def test_failed_probe_opens_the_breaker_again(store: Store) -> None:
    first_open = open_breaker(store, failures=1, cooldown=0.3)
    enqueue_one(store, breaker_job("next", failures=1, cooldown=0.3))
    enqueue_one(store, breaker_job("after", failures=1, cooldown=0.3))
    assert claim(store) == []
    wait_until(store, first_open)
    probe = claim_one(store)
    assert fail(store, probe)

    reopened = limit_info(store, "api").open_until
    assert reopened is not None
    assert reopened > first_open
    assert claim(store) == []
    wait_until(store, reopened)
    assert len(claim(store)) == 1


def test_released_probe_lets_another_probe_through(store: Store) -> None:
    open_until = open_breaker(store, failures=1, cooldown=0.2)
    enqueue_one(store, breaker_job("probe", failures=1, cooldown=0.2))
    wait_until(store, open_until)
    probe = claim_one(store)
    assert claim(store) == []
    assert store.release([lease(probe)]) == [True]
    assert claim_one(store).id == probe.id


def test_reset_breaker_closes_it(store: Store) -> None:
    open_breaker(store, failures=2, cooldown=60.0)
    enqueue_one(store, breaker_job("waiting", cooldown=60.0))
    assert claim(store) == []

    assert store.reset_breaker("api") is True
    info = limit_info(store, "api")
    assert (info.failures, info.open_until) == (0, None)
    assert len(claim(store)) == 1
    assert store.reset_breaker("api") is False
    assert store.reset_breaker("never-seen") is False


def test_success_resets_the_failure_count(store: Store) -> None:
    for outcome in ("fail", "succeed", "fail"):
        enqueue_one(store, breaker_job(outcome, failures=2))
        claimed = claim_one(store)
        assert fail(store, claimed) if outcome == "fail" else succeed(store, claimed)
    info = limit_info(store, "api")
    assert info.open_until is None
    assert info.failures == 1


#: A failure's kinds as the worker reports them: its class, then its bases.
BAD_RECORD = ("app.BadRecord", "builtins.ValueError", "builtins.Exception")


def ignoring_job(*args: object, failures: int = 2, cooldown: float = 60.0) -> NewJob:
    """A job whose breaker "api" ignores ValueError (and so its subclasses)."""
    breaker = (BreakerKey("api", failures, cooldown, ("builtins.ValueError",)),)
    return new_job(*args, breaker=breaker, lease=30.0)


def test_a_failure_a_breaker_ignores_counts_neither_way(store: Store) -> None:
    enqueue_one(store, ignoring_job("counted"))
    assert fail(store, claim_one(store), kinds=("builtins.OSError", "builtins.Exception"))
    assert limit_info(store, "api").failures == 1

    # a subclass of an ignored class: not counted, and its slot is free again
    enqueue_one(store, ignoring_job("ignored"))
    enqueue_one(store, ignoring_job("next"))
    ignored = claim_one(store)
    assert fail(store, ignored, "BadRecord: no amount", kinds=BAD_RECORD)
    info = limit_info(store, "api")
    assert (info.failures, info.open_until) == (1, None)
    assert get(store, ignored.id).state is JobState.FAILED  # the attempt failed all the same

    # the next counted failure reaches the threshold
    assert fail(store, claim_one(store), kinds=("builtins.OSError",))
    assert limit_info(store, "api").open_until is not None


def test_a_failure_with_no_kinds_counts_in_a_breaker_that_ignores_some(store: Store) -> None:
    enqueue_one(store, ignoring_job(1, failures=1))
    assert fail(store, claim_one(store))  # no kinds reported: counted
    assert limit_info(store, "api").open_until is not None


def test_an_ignored_failure_neither_resets_nor_closes_an_open_breaker(store: Store) -> None:
    for i in range(2):
        enqueue_one(store, ignoring_job(f"failing-{i}", cooldown=0.3))
        assert fail(store, claim_one(store), kinds=("builtins.OSError",))
    open_until = limit_info(store, "api").open_until
    assert open_until is not None
    for i in range(2):
        enqueue_one(store, ignoring_job(f"waiting-{i}", cooldown=0.3))
    wait_until(store, open_until)
    probe = claim_one(store)
    assert claim(store) == []  # one probe at a time

    # the probe fails on an ignored error: still open as it was, another probe may run
    assert fail(store, probe, kinds=BAD_RECORD)
    info = limit_info(store, "api")
    assert info.open_until == pytest.approx(open_until)
    assert info.failures >= 2
    assert len(claim(store, limit=10)) == 1


def test_each_breaker_of_a_job_decides_by_its_own_ignored_kinds(store: Store) -> None:
    breakers = (
        BreakerKey("lenient", 5, 60.0, ("builtins.ValueError",)),
        BreakerKey("strict", 5, 60.0),
    )
    enqueue_one(store, new_job(1, breaker=breakers, lease=30.0))
    assert fail(store, claim_one(store), kinds=BAD_RECORD)
    assert limit_info(store, "lenient").failures == 0
    assert limit_info(store, "strict").failures == 1


# -- fairness --------------------------------------------------------------------


def test_one_busy_key_does_not_starve_the_others(store: Store) -> None:
    def on(host: str, i: int) -> NewJob:
        return new_job(host, i, concurrency=(ConcurrencyKey(host, 10_000),), lease=30.0)

    store.enqueue([on("big.example", i) for i in range(900)])
    store.enqueue([on(f"site-{i % 99}.example", i) for i in range(100)])

    claimed: list[ClaimedJob] = []
    for _ in range(100):
        claimed += claim(store, limit=10)
        if len(claimed) >= 100:
            break
    hosts = Counter(first_arg(c) for c in claimed[:100])
    assert len(claimed) >= 100
    assert len(hosts) >= 50, hosts.most_common(5)
    assert hosts["big.example"] <= 50
    assert hosts["big.example"] >= 1  # the busy key is served too


def test_a_new_key_is_served_before_an_old_backlog(store: Store) -> None:
    def on(host: str, i: int) -> NewJob:
        return new_job(host, i, concurrency=(ConcurrencyKey(host, 10_000),), lease=30.0)

    store.enqueue([on("big.example", i) for i in range(300)])
    claim(store, limit=20)
    late = enqueue_one(store, on("late.example", 0))
    next_ten = {c.id for c in claim(store, limit=10)}
    assert late in next_ten
