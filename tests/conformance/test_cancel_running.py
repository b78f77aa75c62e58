"""Cancelling a running job: the store marks it, tells its worker through the
lease extension, and ends it cancelled when the attempt ends, whatever the
attempt reports (every store)."""

from __future__ import annotations

from typing import Any

import pytest

from rota.errors import InvalidArgument
from rota.models import ClaimedJob, ConcurrencyKey, JobState
from rota.stores import Store

from .support import claim, claim_one, enqueue_one, fail, get, lease, new_job, succeed, wait_expired


def _running(store: Store, queue: str, **fields: Any) -> ClaimedJob:
    enqueue_one(store, new_job(queue, queue=queue, lease=fields.pop("lease", 5.0), **fields))
    return claim_one(store, queue)


def _ended_cancelled(store: Store, job: ClaimedJob, by: str | None) -> dict[str, Any]:
    """Check the job ended cancelled after one attempt; its last history entry."""
    stored = get(store, job.id)
    assert stored.state is JobState.CANCELLED
    assert stored.finished_at is not None
    entry = dict(stored.history[-1])
    assert entry["event"] == "cancelled" and entry["by"] == by
    assert entry["attempt"] == job.attempt and entry["worker"] == "worker-1"
    assert isinstance(entry["requested_at"], float)
    assert entry["requested_at"] <= entry["at"] <= stored.finished_at + 1e-3
    return entry


def test_cancel_marks_a_running_job_and_extend_reports_it(store: Store) -> None:
    job = _running(store, "busy")
    other = _running(store, "calm")
    before = store.now()

    assert store.cancel([job.id], by="alice") == [True]
    assert get(store, job.id).state is JobState.RUNNING  # until its worker stops it
    assert store.extend([lease(job), lease(other)]) == ["cancel", "held"]
    assert store.extend([lease(job)]) == ["cancel"]  # every extension says so until it ends
    assert store.cancel([job.id], by="bob") == [False]  # asked once already

    assert succeed(store, job, "done anyway")  # a finish after the cancel is taken...
    entry = _ended_cancelled(store, job, "alice")  # ...and recorded as cancelled
    assert before - 1.0 <= entry["requested_at"] <= store.now()
    assert get(store, job.id).result is None
    assert store.extend([lease(job)]) == ["lost"]
    assert store.cancel([job.id]) == [False]  # finished
    assert get(store, other.id).state is JobState.RUNNING


def test_a_failure_after_the_cancel_is_not_retried(store: Store) -> None:
    job = _running(store, "busy", max_attempts=5)
    assert store.cancel([job.id]) == [True]
    assert fail(store, job, retry_in=0.0)
    _ended_cancelled(store, job, None)
    assert claim(store, ["busy"]) == []


def test_a_stale_finish_of_a_cancelled_job_is_refused(store: Store) -> None:
    job = _running(store, "busy")
    assert store.cancel([job.id], by="alice") == [True]
    assert succeed(store, job)
    assert not succeed(store, job)
    assert not fail(store, job)
    _ended_cancelled(store, job, "alice")


def test_release_at_shutdown_ends_a_cancelled_job(store: Store) -> None:
    job = _running(store, "busy")
    assert store.cancel([job.id], by="alice") == [True]
    assert store.release([lease(job)]) == [True]
    _ended_cancelled(store, job, "alice")
    assert claim(store, ["busy"]) == []


def test_an_expired_lease_ends_a_cancelled_job(store: Store) -> None:
    job = _running(store, "busy", lease=0.2)
    assert store.cancel([job.id], by="alice") == [True]
    wait_expired(store, job.id)
    assert store.recover() == [job.id]
    _ended_cancelled(store, job, "alice")
    assert claim(store, ["busy"]) == []


def test_cancel_frees_the_slot_and_the_unique_key(store: Store) -> None:
    limited = (ConcurrencyKey("one-at-a-time", 1),)
    job = _running(store, "busy", concurrency=limited, unique_key="only-one")
    waiting = enqueue_one(store, new_job("next", queue="busy", concurrency=limited))
    assert claim(store, ["busy"]) == []  # the slot is taken
    assert store.cancel([job.id]) == [True]
    assert claim(store, ["busy"]) == []  # still taken until the attempt ends
    assert succeed(store, job)
    assert [j.id for j in claim(store, ["busy"])] == [waiting]
    again = store.enqueue([new_job("again", queue="other", unique_key="only-one")])[0]
    assert not again.duplicate


def test_a_retried_cancelled_job_runs_again_unmarked(store: Store) -> None:
    job = _running(store, "busy")
    assert store.cancel([job.id]) == [True]
    assert succeed(store, job)
    assert store.retry([job.id]) == [True]
    again = claim_one(store, "busy")
    assert store.extend([lease(again)]) == ["held"]
    assert succeed(store, again)
    assert get(store, job.id).state is JobState.SUCCEEDED


@pytest.mark.parametrize("by", ["", 42, ["alice"]])
def test_a_bad_name_is_refused_and_changes_nothing(store: Store, by: Any) -> None:
    job = _running(store, "busy")
    with pytest.raises(InvalidArgument):
        store.cancel([job.id], by=by)
    assert store.extend([lease(job)]) == ["held"]
    assert get(store, job.id).state is JobState.RUNNING
