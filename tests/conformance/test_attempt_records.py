"""Every attempt's history entry names the worker that ran it and that worker's host."""

from __future__ import annotations

from typing import Any

from conformance.support import (
    claim_one,
    enqueue_one,
    fail,
    get,
    lease,
    new_job,
    succeed,
    wait_expired,
    worker_info,
)
from rota.models import JobState
from rota.stores import Store


def _records(store: Store, job_id: str) -> list[tuple[Any, ...]]:
    return [(h["attempt"], h["event"], h["worker"], h["host"]) for h in get(store, job_id).history]


def test_failed_then_succeeded_attempts_name_worker_and_host(store: Store) -> None:
    store.heartbeat(worker_info("w-a", host="box-a"))
    store.heartbeat(worker_info("w-b", host="box-b"))
    job_id = enqueue_one(store, new_job(max_attempts=3))
    first = claim_one(store, worker="w-a")
    assert fail(store, first, error="ValueError: boom", retry_in=0.0)
    second = claim_one(store, worker="w-b")
    assert succeed(store, second, "done")

    job = get(store, job_id)
    assert job.state is JobState.SUCCEEDED
    assert _records(store, job_id) == [
        (1, "failed", "w-a", "box-a"),
        (2, "succeeded", "w-b", "box-b"),
    ]
    assert job.history[0]["error"] == "ValueError: boom"
    assert "error" not in job.history[1]
    assert all(isinstance(h["at"], float | int) for h in job.history)


def test_a_first_attempt_success_names_worker_host_and_time(store: Store) -> None:
    store.heartbeat(worker_info("w-a", host="box-a"))
    job_id = enqueue_one(store, new_job())
    assert succeed(store, claim_one(store, worker="w-a"), "done")
    job = get(store, job_id)
    assert _records(store, job_id) == [(1, "succeeded", "w-a", "box-a")]
    assert job.history[0]["at"] == job.finished_at


def test_final_failure_names_worker_and_host(store: Store) -> None:
    store.heartbeat(worker_info("w-a", host="box-a"))
    job_id = enqueue_one(store, new_job(max_attempts=1))
    assert fail(store, claim_one(store, worker="w-a"), retry_in=1.0)
    assert get(store, job_id).state is JobState.FAILED
    assert _records(store, job_id) == [(1, "failed", "w-a", "box-a")]


def test_released_attempt_names_worker_and_host(store: Store) -> None:
    store.heartbeat(worker_info("w-a", host="box-a"))
    job_id = enqueue_one(store, new_job())
    assert store.release([lease(claim_one(store, worker="w-a"))]) == [True]
    job = get(store, job_id)
    assert (job.state, job.attempt) == (JobState.QUEUED, 0)
    assert _records(store, job_id) == [(1, "released", "w-a", "box-a")]


def test_lost_attempt_names_worker_and_host(store: Store) -> None:
    store.heartbeat(worker_info("w-gone", host="box-z"))
    job_id = enqueue_one(store, new_job(lease=0.3, max_lost=3))
    claim_one(store, worker="w-gone")
    wait_expired(store, job_id)
    assert store.recover() == [job_id]
    assert _records(store, job_id) == [(1, "lost", "w-gone", "box-z")]


def test_a_worker_without_heartbeat_record_has_no_host(store: Store) -> None:
    job_id = enqueue_one(store, new_job())
    assert succeed(store, claim_one(store, worker="never-beat"))
    assert _records(store, job_id) == [(1, "succeeded", "never-beat", None)]


def test_a_refused_outcome_records_nothing(store: Store) -> None:
    store.heartbeat(worker_info("w-a", host="box-a"))
    job_id = enqueue_one(store, new_job())
    claimed = claim_one(store, worker="w-a")
    assert store.release([lease(claimed)]) == [True]
    assert not succeed(store, claimed)  # its lease is gone: refused
    assert store.release([lease(claimed)]) == [False]
    assert _records(store, job_id) == [(1, "released", "w-a", "box-a")]
