"""Guarantees 1 and 7: an accepted job is in the store at once; bad input changes nothing."""

from __future__ import annotations

import calendar
import uuid
from contextlib import closing
from datetime import UTC, datetime, timedelta

import pytest

from conformance.support import (
    all_jobs,
    claim,
    claim_within,
    enqueue_one,
    get,
    new_job,
    open_stores,
    payload,
    wait_until,
)
from rota import App, InvalidArgument, PayloadTooLarge, SerializationError
from rota.models import JobQuery, JobState, NewJob
from rota.stores import Store


def test_job_is_readable_right_after_enqueue(store: Store) -> None:
    before = store.now()
    job = new_job("https://example.com", 3, task="fetch", queue="crawl", priority=2)
    result = store.enqueue([job])

    assert [(r.id, r.duplicate) for r in result] == [(job.id, False)]
    found = get(store, job.id)
    assert found.task == "fetch"
    assert found.queue == "crawl"
    assert found.state is JobState.QUEUED
    assert found.args == ["https://example.com", 3]
    assert found.kwargs == {}
    assert found.priority == 2
    assert found.attempt == 0
    assert found.max_attempts == 1
    assert before - 1 <= found.enqueued_at <= store.now() + 1
    assert [j.id for j in all_jobs(store)] == [job.id]
    counts = {q.name: q.counts for q in store.queues()}
    assert counts == {"crawl": {JobState.QUEUED: 1}}


def test_job_is_readable_from_another_store_instance(url: str) -> None:
    with open_stores(url, 2) as (producer, reader):
        job_id = enqueue_one(producer, new_job(1))
        assert get(reader, job_id).state is JobState.QUEUED
        assert [j.id for j in all_jobs(reader)] == [job_id]


def test_kwargs_are_kept(store: Store) -> None:
    job = NewJob(id=uuid.uuid4().hex, task="t", queue="default", payload=payload(1, key="v"))
    enqueue_one(store, job)
    found = get(store, job.id)
    assert (found.args, found.kwargs) == ([1], {"key": "v"})


def test_batch_enqueue_keeps_order(store: Store) -> None:
    jobs = [new_job(i) for i in range(50)]
    results = store.enqueue(jobs)
    assert [r.id for r in results] == [j.id for j in jobs]
    assert not any(r.duplicate for r in results)
    found = store.get_jobs([j.id for j in jobs])
    assert [j.args if j else None for j in found] == [[i] for i in range(50)]


def test_get_jobs_answers_in_the_order_asked(store: Store) -> None:
    a = enqueue_one(store, new_job("a"))
    b = enqueue_one(store, new_job("b"))
    found = store.get_jobs([b, "missing", a])
    assert [j.id if j else None for j in found] == [b, None, a]
    assert store.get_job("missing") is None


def test_empty_batch_is_a_no_op(store: Store) -> None:
    assert store.enqueue([]) == []
    assert all_jobs(store) == []


def test_batch_with_duplicate_id_stores_nothing(store: Store) -> None:
    first = new_job(1, unique_key="k-1")
    twin = new_job(2, job_id=first.id)
    with pytest.raises(InvalidArgument, match="already exists") as refused:
        store.enqueue([new_job(0, queue="other"), first, twin])
    if store.kind != "redis":  # the SQL stores name the id
        assert f"a job with id '{first.id}' already exists" in str(refused.value)
    assert all_jobs(store) == []
    assert sum(sum(q.counts.values()) for q in store.queues()) == 0
    # the rolled-back batch holds no unique key either
    again = store.enqueue([new_job(3, unique_key="k-1")])[0]
    assert not again.duplicate


def test_batch_reusing_a_stored_id_stores_nothing(store: Store) -> None:
    existing = enqueue_one(store, new_job("old"))
    with pytest.raises(InvalidArgument, match="already exists") as refused:
        store.enqueue([new_job("new"), new_job("clash", job_id=existing)])
    if store.kind != "redis":  # the SQL stores name the id
        assert f"a job with id '{existing}' already exists" in str(refused.value)
    jobs = all_jobs(store)
    assert [j.id for j in jobs] == [existing]
    assert jobs[0].args == ["old"]


def test_delay_makes_a_scheduled_job_that_becomes_queued(store: Store) -> None:
    job_id = enqueue_one(store, new_job(delay=0.3))
    found = get(store, job_id)
    assert found.state is JobState.SCHEDULED
    assert found.run_at == pytest.approx(found.enqueued_at + 0.3, abs=0.05)
    assert {q.name: q.counts for q in store.queues()} == {"default": {JobState.SCHEDULED: 1}}
    assert claim(store) == []

    wait_until(store, found.run_at)
    assert get(store, job_id).state is JobState.QUEUED
    assert claim_within(store)[0].id == job_id


def test_run_at_in_the_past_is_queued_at_once(store: Store) -> None:
    run_at = store.now() - 60
    job_id = enqueue_one(store, new_job(run_at=run_at))
    found = get(store, job_id)
    assert found.state is JobState.QUEUED
    assert found.run_at == pytest.approx(run_at)
    assert claim(store)[0].id == job_id


def test_run_at_in_the_future_is_scheduled(store: Store) -> None:
    run_at = store.now() + 0.3
    job_id = enqueue_one(store, new_job(run_at=run_at, delay=100.0))
    found = get(store, job_id)
    assert found.state is JobState.SCHEDULED
    assert found.run_at == pytest.approx(run_at)  # absolute run_at wins over delay
    assert claim(store) == []
    wait_until(store, run_at)
    assert claim_within(store)[0].id == job_id


# -- through the public App API ------------------------------------------------


def test_send_returns_after_the_job_is_stored(url: str) -> None:
    with closing(App(url)) as app, open_stores(url, 1) as (reader,):

        @app.task(queue="mail")
        def notify(user: str, *, loud: bool = False) -> None:
            """Sends a notification."""

        handle = notify.send("ada", loud=True)
        assert not handle.duplicate
        found = get(reader, handle.id)
        assert (found.task, found.queue) == (notify.name, "mail")
        assert (found.args, found.kwargs) == (["ada"], {"loud": True})
        assert handle.status() == "queued"


def test_non_json_arguments_raise_and_enqueue_nothing(url: str) -> None:
    with closing(App(url)) as app:

        @app.task
        def work(value: object) -> None:
            """Does nothing."""

        with pytest.raises(SerializationError, match="JSON"):
            work.send(object())
        with pytest.raises(SerializationError):
            work.send_many([(1,), (object(),), (3,)])
        with pytest.raises(SerializationError):
            work.send_in(5, {1, 2})
        assert all_jobs(app.store) == []
        assert app.store.queues() == []


def test_oversized_payload_raises_and_enqueues_nothing(url: str) -> None:
    with closing(App(url, payload_cap=256)) as app:

        @app.task
        def work(value: str) -> None:
            """Does nothing."""

        with pytest.raises(PayloadTooLarge) as raised:
            work.send("x" * 1000)
        assert raised.value.cap == 256
        assert raised.value.size > 256
        with pytest.raises(PayloadTooLarge):
            work.send_many([("small",), ("x" * 1000,)])
        assert all_jobs(app.store) == []
        assert app.store.queues() == []
        handle = work.send("x" * 100)  # under the cap: accepted
        assert handle.status() == "queued"


def test_send_many_is_all_or_nothing_for_bad_items(url: str) -> None:
    with closing(App(url)) as app:

        @app.task
        def work(value: int) -> None:
            """Does nothing."""

        with pytest.raises(InvalidArgument):
            work.send_many([(1,), 2])  # type: ignore[list-item]
        assert all_jobs(app.store) == []
        handles = work.send_many([(1,), {"value": 2}])
        assert [h.job().args for h in handles] == [[1], []]
        assert [h.job().kwargs for h in handles] == [{}, {"value": 2}]


def test_send_in_is_scheduled_then_queued(url: str) -> None:
    with closing(App(url)) as app:

        @app.task
        def work() -> None:
            """Does nothing."""

        handle = work.send_in(0.3)
        job = handle.job()
        assert handle.status() == "scheduled"
        assert job.run_at == pytest.approx(job.enqueued_at + 0.3, abs=0.05)
        wait_until(app.store, job.run_at)
        assert handle.status() == "queued"


def test_send_at_takes_naive_datetimes_as_utc(url: str) -> None:
    with closing(App(url)) as app:

        @app.task
        def work() -> None:
            """Does nothing."""

        naive = datetime(2100, 1, 2, 3, 4, 5)
        aware = datetime(2100, 1, 2, 5, 4, 5, tzinfo=UTC) + timedelta(hours=1)
        far = work.send_at(naive).job()
        later = work.send_at(aware).job()
        assert far.state is JobState.SCHEDULED
        assert far.run_at == calendar.timegm(naive.timetuple())
        assert later.run_at - far.run_at == 3 * 3600

        soon = datetime.now(UTC).replace(tzinfo=None) + timedelta(seconds=0.3)
        handle = work.send_at(soon)
        assert handle.status() == "scheduled"
        wait_until(app.store, handle.job().run_at)
        assert handle.status() == "queued"
        assert [j.id for j in all_jobs(app.store, JobQuery(state=JobState.QUEUED))] == [handle.id]
