"""Outcomes and operator actions: results, retries, the failed set, cancel, delete."""

from __future__ import annotations

from contextlib import closing
from unittest.mock import ANY

import pytest

from conformance.support import (
    all_jobs,
    claim,
    claim_one,
    claim_within,
    enqueue_one,
    fail,
    get,
    job_ids,
    new_job,
    succeed,
    wait_expired,
    wait_until,
)
from rota import App, JobCancelled, JobFailed, JobNotFound, JobTimeout
from rota.models import JobQuery, JobState
from rota.stores import Store
from rota.stores.base import steering_progress

TRACEBACK = (
    "Traceback (most recent call last):\n"
    '  File "crawl.py", line 12, in fetch\n'
    "    1 / 0\n"
    "ZeroDivisionError: division by zero"
)


def test_success_stores_the_result(store: Store) -> None:
    job_id = enqueue_one(store, new_job(lease=5.0))
    claimed = claim_one(store)
    assert succeed(store, claimed, {"pages": [1, 2], "ok": True})

    job = get(store, job_id)
    assert job.state is JobState.SUCCEEDED
    assert job.result == {"pages": [1, 2], "ok": True}
    assert (job.error, job.traceback) == (None, None)
    assert job.attempt == 1
    assert job.finished_at is not None
    assert job.started_at is not None
    assert job.started_at <= job.finished_at
    assert job.lease_expires is None
    assert claim(store) == []


def test_failure_with_retry_goes_to_scheduled_then_runs_again(store: Store) -> None:
    job_id = enqueue_one(store, new_job(lease=5.0, max_attempts=2))
    first = claim_one(store)
    assert fail(store, first, error="OSError: reset", retry_in=0.3)

    job = get(store, job_id)
    assert job.state is JobState.SCHEDULED
    assert job.error == "OSError: reset"
    assert job.run_at == pytest.approx(store.now() + 0.3, abs=0.25)
    assert [(h["event"], h["attempt"]) for h in job.history] == [("failed", 1)]
    assert claim(store) == []

    wait_until(store, job.run_at)
    second = claim_within(store)[0]
    assert (second.id, second.attempt) == (job_id, 2)
    # no attempts left: the next failure is final even with retry_in
    assert fail(store, second, error="OSError: again", traceback=TRACEBACK, retry_in=0.0)
    job = get(store, job_id)
    assert job.state is JobState.FAILED
    assert (job.error, job.traceback) == ("OSError: again", TRACEBACK)
    assert [h["event"] for h in job.history] == ["failed", "failed"]


def test_a_success_after_a_failed_attempt_keeps_its_error(store: Store) -> None:
    """A succeeded job keeps the error and traceback of its latest failed
    attempt (the dashboard shows them as an earlier error); its state says
    it succeeded, and its history has every attempt."""
    job_id = enqueue_one(store, new_job(lease=5.0, max_attempts=2))
    assert fail(store, claim_one(store), error="OSError: reset", traceback=TRACEBACK, retry_in=0)
    wait_until(store, get(store, job_id).run_at)
    assert succeed(store, claim_within(store)[0], "ok")

    job = get(store, job_id)
    assert (job.state, job.result) == (JobState.SUCCEEDED, "ok")
    assert (job.error, job.traceback) == ("OSError: reset", TRACEBACK)
    assert [(h["event"], h.get("error")) for h in job.history] == [
        ("failed", "OSError: reset"),
        ("succeeded", None),
    ]


def test_failure_without_attempts_left_is_failed(store: Store) -> None:
    job_id = enqueue_one(store, new_job(task="fetch", queue="crawl", lease=5.0))
    claimed = claim_one(store, "crawl")
    assert fail(store, claimed, error="ZeroDivisionError: division by zero", traceback=TRACEBACK)

    job = get(store, job_id)
    assert job.state is JobState.FAILED
    assert job.error == "ZeroDivisionError: division by zero"
    assert job.traceback == TRACEBACK
    assert job.finished_at is not None
    assert job_ids(store, JobQuery(state=JobState.FAILED)) == {job_id}
    assert job_ids(store, JobQuery(queue="crawl", task="fetch", state=JobState.FAILED)) == {job_id}
    assert job_ids(store, JobQuery(state=JobState.QUEUED)) == set()
    assert claim(store, ["crawl"]) == []


def test_failure_without_retry_in_is_final_even_with_attempts_left(store: Store) -> None:
    job_id = enqueue_one(store, new_job(lease=5.0, max_attempts=5))
    assert fail(store, claim_one(store), retry_in=None)
    assert get(store, job_id).state is JobState.FAILED


def test_retry_requeues_a_failed_job(store: Store) -> None:
    job_id = enqueue_one(store, new_job(lease=5.0, max_attempts=1))
    assert fail(store, claim_one(store))

    assert store.retry([job_id]) == [True]
    job = get(store, job_id)
    assert job.state is JobState.QUEUED
    assert job.attempt == 0
    again = claim_one(store)
    assert (again.id, again.attempt) == (job_id, 1)
    assert succeed(store, again, "second time lucky")
    assert get(store, job_id).result == "second time lucky"


def test_a_retry_by_hand_is_in_the_history_with_who_asked(store: Store) -> None:
    job_id = enqueue_one(store, new_job(lease=5.0, max_attempts=1))
    assert fail(store, claim_one(store))
    before = store.now()
    assert store.retry([job_id], by="alice") == [True]
    assert succeed(store, claim_one(store))
    history = get(store, job_id).history
    assert [(h["event"], h.get("attempt"), h.get("by")) for h in history] == [
        ("failed", 1, None),
        ("requeued", None, "alice"),
        ("succeeded", 1, None),
    ]
    assert before - 1 <= history[1]["at"] <= store.now() + 1


def test_a_retry_of_every_failed_job_is_in_each_history(store: Store) -> None:
    keyed = enqueue_one(store, new_job(1, lease=5.0, unique_key="u:1"))
    plain = enqueue_one(store, new_job(2, lease=5.0))
    for _ in range(2):
        assert fail(store, claim_one(store))
    assert store.retry_failed(by="bob") == 2
    assert store.retry([keyed]) == [False]  # queued already: no second entry
    for job_id in (keyed, plain):
        events = [(h["event"], h.get("by")) for h in get(store, job_id).history]
        assert events == [("failed", None), ("requeued", "bob")]
    cancelled = enqueue_one(store, new_job(3))
    assert store.cancel([cancelled]) == [True]
    assert store.retry([cancelled]) == [True]  # never ran: its cancel is its first entry
    events = [(h["event"], h["by"]) for h in get(store, cancelled).history]
    assert events == [("cancelled", None), ("requeued", None)]


def _fail_every_attempt(store: Store, job_id: str, attempts: int) -> None:
    """Fail attempts 1 to ``attempts`` of the job, each with a retry asked for:
    every one but the last goes back to scheduled."""
    for attempt in range(1, attempts + 1):
        claimed = claim_within(store)[0]
        assert (claimed.id, claimed.attempt) == (job_id, attempt)
        assert fail(store, claimed, error=f"OSError: try {attempt}", retry_in=0.2)
        job = get(store, job_id)
        last = attempt == attempts
        assert job.state is (JobState.FAILED if last else JobState.SCHEDULED), attempt
        if not last:
            wait_until(store, job.run_at)


def test_a_job_retried_by_hand_gets_its_whole_retry_budget_again(store: Store) -> None:
    job_id = enqueue_one(store, new_job(lease=5.0, max_attempts=3))
    _fail_every_attempt(store, job_id, 3)
    assert store.retry([job_id], by="alice") == [True]
    job = get(store, job_id)
    assert (job.state, job.attempt, job.max_attempts) == (JobState.QUEUED, 0, 3)

    _fail_every_attempt(store, job_id, 3)  # 1 and 2 retried again, 3 is final
    events = [(h["event"], h.get("attempt")) for h in get(store, job_id).history]
    run = [("failed", 1), ("failed", 2), ("failed", 3)]
    assert events == [*run, ("requeued", None), *run]


def test_a_job_lost_max_lost_times_and_retried_may_be_lost_as_often_again(store: Store) -> None:
    job_id = enqueue_one(store, new_job(lease=0.3, max_lost=1, max_attempts=3))
    for _ in range(2):
        claimed = claim_one(store)
        assert (claimed.id, claimed.attempt, claimed.lost) == (job_id, 1, 0)
        wait_expired(store, job_id)
        assert store.recover() == [job_id]
        job = get(store, job_id)
        assert (job.state, job.error, job.lost) == (JobState.FAILED, "worker_lost", 1)
        assert store.retry([job_id]) == [True]
        job = get(store, job_id)
        assert (job.state, job.attempt, job.lost) == (JobState.QUEUED, 0, 0)
    events = [h["event"] for h in get(store, job_id).history]
    assert events == ["lost", "requeued", "lost", "requeued"]


def test_retry_only_applies_to_failed_or_cancelled_jobs(store: Store) -> None:
    running = enqueue_one(store, new_job("running", lease=5.0))
    waiting = enqueue_one(store, new_job("waiting"))
    cancelled = enqueue_one(store, new_job("cancelled"))
    assert store.cancel([cancelled]) == [True]
    assert claim_one(store).id == running
    assert store.retry([running, waiting, "missing", cancelled]) == [False, False, False, True]
    assert get(store, cancelled).state is JobState.QUEUED
    assert get(store, cancelled).finished_at is None
    assert get(store, running).state is JobState.RUNNING
    assert get(store, waiting).state is JobState.QUEUED


def test_retry_failed_by_queue_and_by_task(store: Store) -> None:
    def failed(task: str, queue: str) -> str:
        job_id = enqueue_one(store, new_job(task=task, queue=queue, lease=5.0))
        assert fail(store, claim_one(store, queue))
        return job_id

    a_x = failed("x", "a")
    a_y = failed("y", "a")
    b_x = failed("x", "b")
    b_y = failed("y", "b")
    ok = enqueue_one(store, new_job(task="x", queue="a", lease=5.0))
    assert succeed(store, claim_one(store, "a"))

    assert store.retry_failed(queue="a", task="x") == 1
    assert get(store, a_x).state is JobState.QUEUED
    assert store.retry_failed(task="y") == 2
    assert {get(store, i).state for i in (a_y, b_y)} == {JobState.QUEUED}
    assert get(store, b_x).state is JobState.FAILED
    assert store.retry_failed(queue="b") == 1
    assert get(store, b_x).state is JobState.QUEUED
    assert store.retry_failed() == 0
    assert get(store, ok).state is JobState.SUCCEEDED


def test_retry_failed_queues_each_job_once_while_jobs_fail_again(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Redis works in parts (1,000 jobs each); here 4, so a worker fails the
    # retried jobs again between parts. A store that works in one
    # transaction reports once, after it.
    monkeypatch.setattr("rota.stores.redis._steer._CHUNK", 4)
    ids = [enqueue_one(store, new_job(i, lease=5.0, max_attempts=1)) for i in range(10)]
    for _ in ids:
        assert fail(store, claim_one(store))
    parts: list[int] = []
    late: list[str] = []

    def worker_fails_them_again(count: int) -> None:
        parts.append(count)
        for job in store.claim("w", ["default"], 100):
            assert fail(store, job)
        if not late:  # a job sent and failed after the command began
            late.append(enqueue_one(store, new_job("late", lease=5.0, max_attempts=1)))
            assert fail(store, claim_one(store))

    with steering_progress(worker_fails_them_again):
        assert store.retry_failed(by="op") == 10
    assert sum(parts) == 10
    for job_id in ids:
        job = get(store, job_id)
        assert [h["event"] for h in job.history].count("requeued") == 1, job.history
    assert get(store, late[0]).state is JobState.FAILED
    assert [h["event"] for h in get(store, late[0]).history] == ["failed"]


def test_retry_failed_without_filters_retries_everything_failed(store: Store) -> None:
    ids = []
    for queue in ("a", "b", "c"):
        ids.append(enqueue_one(store, new_job(queue=queue, lease=5.0)))
        assert fail(store, claim_one(store, queue))
    assert store.retry_failed() == 3
    assert {get(store, i).state for i in ids} == {JobState.QUEUED}


def test_cancel_pending_jobs_at_once(store: Store) -> None:
    queued = enqueue_one(store, new_job("queued"))
    scheduled = enqueue_one(store, new_job("scheduled", delay=60.0))
    finished = enqueue_one(store, new_job("finished", queue="busy", lease=5.0))
    assert succeed(store, claim_one(store, "busy"))

    assert store.cancel([queued, scheduled, finished, "missing"]) == [True, True, False, False]
    assert get(store, queued).state is JobState.CANCELLED
    assert get(store, scheduled).state is JobState.CANCELLED
    assert get(store, queued).finished_at is not None
    assert get(store, finished).state is JobState.SUCCEEDED
    assert store.cancel([queued]) == [False]  # already cancelled
    assert claim(store) == []
    assert job_ids(store, JobQuery(state=JobState.CANCELLED)) == {queued, scheduled}
    assert get(store, queued).history == ({"event": "cancelled", "by": None, "at": ANY},)


def test_a_pending_job_cancelled_by_hand_says_who_in_its_history(store: Store) -> None:
    queued = enqueue_one(store, new_job("queued"))
    before = store.now()
    assert store.cancel([queued], by="alice") == [True]
    job = get(store, queued)
    [entry] = job.history
    assert entry["event"] == "cancelled" and entry["by"] == "alice"
    assert before - 1e-3 <= entry["at"] <= store.now() and job.finished_at == entry["at"]
    assert store.retry([queued], by="bob") == [True]
    assert [(h["event"], h["by"]) for h in get(store, queued).history] == [
        ("cancelled", "alice"),
        ("requeued", "bob"),
    ]


def test_delete_removes_jobs_that_are_not_running(store: Store) -> None:
    queued = enqueue_one(store, new_job("queued"))
    running = enqueue_one(store, new_job("running", queue="busy", lease=5.0))
    finished = enqueue_one(store, new_job("finished", queue="done", lease=5.0))
    claimed = claim_one(store, "busy")
    assert succeed(store, claim_one(store, "done"))

    assert store.delete([queued, running, finished, "missing"]) == [True, False, True, False]
    assert store.get_job(queued) is None
    assert store.get_job(finished) is None
    assert get(store, running).state is JobState.RUNNING
    assert [j.id for j in all_jobs(store)] == [running]
    assert claim(store) == []
    assert succeed(store, claimed)


# -- through the public App API ------------------------------------------------


def test_handle_follows_the_job_through_its_states(url: str) -> None:
    with closing(App(url)) as app:

        @app.task(lease=5.0)
        def work(n: int) -> int:
            return n * 2

        later = work.send_in(60, 1)
        assert later.status() == "scheduled"
        handle = work.send(21)
        assert handle.status() == "queued"
        claimed = claim_one(app.store)
        assert claimed.id == handle.id
        assert handle.status() == "running"
        with pytest.raises(JobTimeout):
            handle.result(timeout=0.05)
        assert succeed(app.store, claimed, 42)
        assert handle.status() == "succeeded"
        assert handle.result(timeout=1.0) == 42
        assert handle.job().result == 42


def test_handle_result_raises_job_failed_with_the_remote_traceback(url: str) -> None:
    with closing(App(url)) as app:

        @app.task(lease=5.0)
        def divide(a: int, b: int) -> float:
            return a / b

        handle = divide.send(1, 0)
        claimed = claim_one(app.store)
        assert fail(
            app.store, claimed, error="ZeroDivisionError: division by zero", traceback=TRACEBACK
        )
        assert handle.status() == "failed"
        with pytest.raises(JobFailed) as raised:
            handle.result(timeout=1.0)
        assert raised.value.job_id == handle.id
        assert raised.value.error == "ZeroDivisionError: division by zero"
        assert raised.value.traceback == TRACEBACK
        assert "Remote traceback" in str(raised.value)
        assert "1 / 0" in str(raised.value)


def test_handle_cancel_and_job_cancelled(url: str) -> None:
    with closing(App(url)) as app:

        @app.task
        def work() -> None:
            """Does nothing."""

        handle = work.send()
        assert handle.cancel()
        assert not handle.cancel()
        assert handle.status() == "cancelled"
        with pytest.raises(JobCancelled):
            handle.result(timeout=1.0)
        assert claim(app.store) == []


def test_handle_on_a_deleted_job_raises_job_not_found(url: str) -> None:
    with closing(App(url)) as app:

        @app.task
        def work() -> None:
            """Does nothing."""

        handle = work.send()
        assert app.store.delete([handle.id]) == [True]
        with pytest.raises(JobNotFound):
            handle.status()
        assert app.handle("never-sent").id == "never-sent"
        with pytest.raises(JobNotFound):
            app.handle("never-sent").result(timeout=0.1)


def test_retries_option_allows_store_retries(url: str) -> None:
    with closing(App(url)) as app:

        @app.task(retries=1, lease=5.0)
        def flaky() -> str:
            return "ok"

        handle = flaky.send()
        first = claim_one(app.store)
        assert first.max_attempts == 2
        assert fail(app.store, first, retry_in=0.0)
        second = claim_within(app.store)[0]
        assert second.attempt == 2
        assert succeed(app.store, second, "ok")
        assert handle.result(timeout=1.0) == "ok"
