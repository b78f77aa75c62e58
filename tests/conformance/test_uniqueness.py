"""Guarantee 6: a unique key is held while its job is pending or running, or within its TTL."""

from __future__ import annotations

from contextlib import closing
from typing import Any

from conformance.support import (
    all_jobs,
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
from rota import App
from rota.models import JobState, NewJob
from rota.stores import Store


def unique(*args: object, key: str = "page:/home", **fields: Any) -> NewJob:
    fields.setdefault("lease", 30.0)
    return new_job(*args, unique_key=key, **fields)


def send(store: Store, job: NewJob) -> tuple[str, bool]:
    result = store.enqueue([job])[0]
    return result.id, result.duplicate


def test_duplicate_while_pending_names_the_first_job(store: Store) -> None:
    first = enqueue_one(store, unique("first"))
    assert send(store, unique("second")) == (first, True)
    assert send(store, unique("other queue", queue="elsewhere")) == (first, True)
    assert [j.id for j in all_jobs(store)] == [first]
    assert get(store, first).unique_key == "page:/home"


def test_duplicate_while_scheduled(store: Store) -> None:
    first = enqueue_one(store, unique("later", delay=60.0))
    assert get(store, first).state is JobState.SCHEDULED
    assert send(store, unique("now")) == (first, True)


def test_duplicate_while_running(store: Store) -> None:
    first = enqueue_one(store, unique("first"))
    claimed = claim_one(store)
    assert send(store, unique("second")) == (first, True)
    assert get(store, first).state is JobState.RUNNING
    assert succeed(store, claimed)


def test_duplicate_while_waiting_for_a_retry(store: Store) -> None:
    first = enqueue_one(store, unique(max_attempts=3))
    assert fail(store, claim_one(store), retry_in=60.0)
    assert get(store, first).state is JobState.SCHEDULED
    assert send(store, unique()) == (first, True)


def test_duplicate_after_release_and_after_a_lost_lease(store: Store) -> None:
    first = enqueue_one(store, unique(lease=0.3))
    assert store.release([lease(claim_one(store))]) == [True]
    assert send(store, unique()) == (first, True)
    claim_one(store)
    wait_expired(store, first)
    assert store.recover() == [first]
    assert send(store, unique()) == (first, True)


def test_other_keys_are_independent(store: Store) -> None:
    a = enqueue_one(store, unique(key="a"))
    b = enqueue_one(store, unique(key="b"))
    plain = enqueue_one(store, new_job())
    also_plain = enqueue_one(store, new_job())
    assert len({a, b, plain, also_plain}) == 4


def test_after_success_the_key_is_held_for_unique_for(store: Store) -> None:
    first = enqueue_one(store, unique(unique_for=0.5))
    assert succeed(store, claim_one(store))
    finished_at = get(store, first).finished_at
    assert finished_at is not None

    assert send(store, unique("again")) == (first, True)
    wait_until(store, finished_at + 0.5 + 0.01)
    second, duplicate = send(store, unique("after ttl"))
    assert not duplicate
    assert second != first
    assert get(store, second).state is JobState.QUEUED


def test_unique_for_counts_from_the_finish(store: Store) -> None:
    """The TTL runs from when the job finished, not from when it was sent:
    a job that waited in the queue longer than its TTL still blocks repeats
    for ``unique_for`` seconds after it ran."""
    first = enqueue_one(store, unique(unique_for=0.5))
    wait_until(store, get(store, first).enqueued_at + 0.6)
    assert succeed(store, claim_one(store))
    assert send(store, unique("right after it ran")) == (first, True)


def test_after_success_without_unique_for_the_key_is_free(store: Store) -> None:
    first = enqueue_one(store, unique())
    assert succeed(store, claim_one(store))
    second, duplicate = send(store, unique())
    assert not duplicate
    assert second != first


def test_after_failure_the_key_is_free(store: Store) -> None:
    first = enqueue_one(store, unique(unique_for=60.0))
    assert fail(store, claim_one(store))
    second, duplicate = send(store, unique())
    assert (duplicate, second != first) == (False, True)


def test_after_worker_lost_the_key_is_free(store: Store) -> None:
    first = enqueue_one(store, unique(lease=0.2, max_lost=1, unique_for=60.0))
    claim_one(store)
    wait_expired(store, first)
    assert store.recover() == [first]
    assert get(store, first).state is JobState.FAILED
    assert not send(store, unique())[1]


def test_after_cancel_the_key_is_free(store: Store) -> None:
    first = enqueue_one(store, unique(unique_for=60.0))
    assert store.cancel([first]) == [True]
    second, duplicate = send(store, unique())
    assert (duplicate, second != first) == (False, True)


def test_after_delete_or_purge_the_key_is_free(store: Store) -> None:
    first = enqueue_one(store, unique(key="deleted"))
    assert store.delete([first]) == [True]
    assert not send(store, unique(key="deleted"))[1]

    enqueue_one(store, unique(key="purged", queue="q"))
    assert store.purge_queue("q") == 1
    assert not send(store, unique(key="purged", queue="q"))[1]


def test_a_succeeded_job_deleted_or_purged_keeps_its_key_for_unique_for(store: Store) -> None:
    """The key outlives the job's record: a crawl may drop its finished jobs
    long before it may fetch their URLs again. A duplicate then names a job
    that is gone."""
    deleted = enqueue_one(store, unique(key="deleted", unique_for=3600.0))
    assert succeed(store, claim_one(store))
    assert store.delete([deleted]) == [True]
    assert send(store, unique(key="deleted")) == (deleted, True)
    assert store.get_job(deleted) is None

    purged = enqueue_one(store, unique(key="purged", unique_for=3600.0))
    assert succeed(store, claim_one(store))
    wait_until(store, get(store, purged).finished_at + 0.01)  # type: ignore[operator]
    assert store.purge_finished(0.001) == 1
    assert send(store, unique(key="purged")) == (purged, True)
    assert store.get_job(purged) is None


def test_retried_job_holds_its_key_again(store: Store) -> None:
    first = enqueue_one(store, unique())
    assert fail(store, claim_one(store))
    assert store.retry([first]) == [True]
    assert send(store, unique()) == (first, True)


def test_retried_cancelled_job_holds_its_key_again(store: Store) -> None:
    first = enqueue_one(store, unique())
    assert store.cancel([first]) == [True]
    assert store.retry([first]) == [True]
    assert get(store, first).state is JobState.QUEUED
    assert send(store, unique()) == (first, True)


def test_retry_is_refused_while_another_job_holds_the_key(store: Store) -> None:
    failed = enqueue_one(store, unique("failed"))
    assert fail(store, claim_one(store))
    cancelled = enqueue_one(store, unique("cancelled"))
    assert store.cancel([cancelled]) == [True]
    holder = enqueue_one(store, unique("holder", queue="later"))

    assert store.retry([failed, cancelled]) == [False, False]  # holder is queued
    claim_one(store, "later")
    assert store.retry([cancelled, failed]) == [False, False]  # holder is running
    assert get(store, failed).state is JobState.FAILED
    assert get(store, cancelled).state is JobState.CANCELLED
    assert claim(store, limit=10) == []
    assert send(store, unique("third")) == (holder, True)


def test_retry_takes_the_key_once_its_holder_ended(store: Store) -> None:
    old = enqueue_one(store, unique("old"))
    assert fail(store, claim_one(store))
    enqueue_one(store, unique("holder"))
    assert store.retry([old]) == [False]
    assert succeed(store, claim_one(store))  # without unique_for: the key is free
    assert store.retry([old]) == [True]
    assert send(store, unique("third")) == (old, True)


def test_retry_is_refused_while_a_success_keeps_the_key(store: Store) -> None:
    old = enqueue_one(store, unique("old"))
    assert fail(store, claim_one(store))
    kept = enqueue_one(store, unique("kept", unique_for=60.0))
    assert succeed(store, claim_one(store))
    assert store.retry([old]) == [False]
    assert send(store, unique("third")) == (kept, True)


def test_retry_of_two_jobs_of_one_free_key_queues_the_first(store: Store) -> None:
    first = enqueue_one(store, unique("first"))
    assert fail(store, claim_one(store))
    second = enqueue_one(store, unique("second"))
    assert fail(store, claim_one(store))
    assert store.retry([second, first]) == [True, False]
    assert get(store, first).state is JobState.FAILED
    assert send(store, unique("third")) == (second, True)


def test_retry_failed_leaves_jobs_whose_key_is_held(store: Store) -> None:
    blocked = enqueue_one(store, unique("blocked", key="held"))
    assert fail(store, claim_one(store))
    free = enqueue_one(store, unique("free", key="free"))
    assert fail(store, claim_one(store))
    plain = enqueue_one(store, new_job("plain"))
    assert fail(store, claim_one(store))
    holder = enqueue_one(store, unique("holder", key="held", queue="later"))

    assert store.retry_failed() == 2
    assert get(store, blocked).state is JobState.FAILED
    assert get(store, free).state is JobState.QUEUED
    assert get(store, plain).state is JobState.QUEUED
    assert send(store, unique(key="held")) == (holder, True)
    assert send(store, unique(key="free")) == (free, True)


def test_retry_failed_queues_one_job_per_key(store: Store) -> None:
    for i in range(3):
        enqueue_one(store, unique(i))
        assert fail(store, claim_one(store))
    assert store.retry_failed() == 1
    [queued] = [j for j in all_jobs(store) if j.state is JobState.QUEUED]
    assert send(store, unique("again")) == (queued.id, True)


#: Keys (and ids) that a case-, space- or accent-insensitive collation would
#: take for one: composed and decomposed é are different bytes too.
LOOK_ALIKE = ("cafe", "Cafe", "CAFE", "cafe ", "caf\u00e9", "cafe\u0301", "CAF\u00c9")


def test_keys_and_ids_are_compared_byte_for_byte(store: Store) -> None:
    """Keys that differ only in case, a trailing space or an accent are
    different keys, and so are such ids (MySQL's default collations would
    take them for one)."""
    results = store.enqueue([unique(i, key=key) for i, key in enumerate(LOOK_ALIKE)])
    assert not any(r.duplicate for r in results)
    for key, first in zip(LOOK_ALIKE, results, strict=True):
        assert send(store, unique("again", key=key)) == (first.id, True)
        assert get(store, first.id).unique_key == key
    ids = [enqueue_one(store, new_job(job_id=f"job-{key}")) for key in LOOK_ALIKE]
    jobs = store.get_jobs(ids)
    assert [job.id if job else None for job in jobs] == ids
    assert len(all_jobs(store)) == 2 * len(LOOK_ALIKE)


def test_equal_keys_in_one_batch_behave_as_if_sent_in_turn(store: Store) -> None:
    jobs = [unique("a"), unique("b"), unique("c", key="other"), unique("d")]
    results = store.enqueue(jobs)
    assert [(r.id, r.duplicate) for r in results] == [
        (jobs[0].id, False),
        (jobs[0].id, True),
        (jobs[2].id, False),
        (jobs[0].id, True),
    ]
    assert {j.id for j in all_jobs(store)} == {jobs[0].id, jobs[2].id}


def test_batch_after_an_existing_holder(store: Store) -> None:
    first = enqueue_one(store, unique())
    fresh = unique(key="fresh")
    results = store.enqueue([unique(), fresh])
    assert [(r.id, r.duplicate) for r in results] == [(first, True), (fresh.id, False)]


def test_concurrent_sends_of_one_key_make_one_job(url: str) -> None:
    threads = 8
    with open_stores(url, threads) as stores:

        def send_from(index: int) -> tuple[str, bool]:
            return send(stores[index], unique(f"sender-{index}", unique_for=60.0))

        results = run_threads(threads, send_from)
        winners = [job_id for job_id, duplicate in results if not duplicate]
        assert len(winners) == 1
        assert {job_id for job_id, _ in results} == set(winners)
        assert [j.id for j in all_jobs(stores[0])] == winners
        assert claim(stores[0], limit=10)[0].id == winners[0]


# -- through the public App API ------------------------------------------------


def test_send_reports_duplicates(url: str) -> None:
    with closing(App(url)) as app:

        @app.task(unique=True, unique_for=60)
        def crawl(url: str) -> None:
            """Fetches a page once."""

        first = crawl.send("https://example.com/")
        again = crawl.send("https://example.com/")
        other = crawl.send("https://example.com/about")
        assert not first.duplicate
        assert (again.id, again.duplicate) == (first.id, True)
        assert not other.duplicate
        assert len(all_jobs(app.store)) == 2


def test_send_many_reports_per_item(url: str) -> None:
    with closing(App(url)) as app:

        @app.task(unique=lambda url: url.split("#")[0])
        def crawl(url: str) -> None:
            """Fetches a page once."""

        existing = crawl.send("https://a.example/")
        handles = crawl.send_many(
            [
                ("https://b.example/",),
                ("https://b.example/#top",),
                ("https://a.example/#x",),
                ("https://c.example/",),
            ]
        )
        assert [h.duplicate for h in handles] == [False, True, True, False]
        assert handles[1].id == handles[0].id
        assert handles[2].id == existing.id
        assert len(all_jobs(app.store)) == 3
