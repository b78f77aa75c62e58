"""Steering many jobs in one store call (``app.admin.retry_jobs``,
``cancel_jobs``, ``delete_jobs``, which ``rota jobs retry | cancel | delete``
use): each job gets the answer it would get alone, in the order asked, and
only the jobs changed are audited."""

from __future__ import annotations

from contextlib import closing

import pytest

from conformance.support import claim_one, enqueue_one, fail, get, new_job
from rota import App
from rota.admin import Actor, delete_refusal, retry_refusal
from rota.errors import Conflict, InvalidArgument, JobNotFound
from rota.models import JobState
from rota.stores import Store

ANN = Actor("ann", "operator", "cli")


def _failed(store: Store) -> str:
    """A job that failed for good (in a queue of its own: no other job is claimed)."""
    job_id = enqueue_one(store, new_job(queue="dead", max_attempts=1))
    claimed = claim_one(store, "dead")
    assert claimed.id == job_id and fail(store, claimed)
    return job_id


def _audited(app: App, action: str) -> list[str]:
    entries, _ = app.store.audit(action=action)
    return sorted(e.target for e in entries)


def test_retry_jobs_answers_each_job_as_a_retry_of_it_alone(url: str) -> None:
    with closing(App(url)) as app:
        store = app.store
        failed = [_failed(store) for _ in range(3)]
        queued = enqueue_one(store, new_job())
        asked = [failed[0], "no-such-job", queued, failed[1], failed[2]]
        assert app.admin.retry_jobs(asked, by=ANN) == [True, False, False, True, True]
        assert [j.state if j else None for j in store.get_jobs(asked)] == [
            JobState.QUEUED,
            None,
            JobState.QUEUED,
            JobState.QUEUED,
            JobState.QUEUED,
        ]
        assert _audited(app, "job.retry") == sorted(failed)
        assert isinstance(retry_refusal("no-such-job", None), JobNotFound)
        refusal = retry_refusal(queued, store.get_job(queued))
        assert isinstance(refusal, Conflict)
        assert str(refusal) == (
            f"job {queued} is queued; only failed or cancelled jobs can be retried"
        )


def test_delete_jobs_keeps_running_jobs_and_deletes_the_rest(url: str) -> None:
    with closing(App(url)) as app:
        store = app.store
        pending = [enqueue_one(store, new_job()) for _ in range(3)]
        running = claim_one(store).id
        failed = _failed(store)
        asked = [*pending, failed, "no-such-job"]
        kept = [job_id for job_id in pending if job_id != running]
        results = app.admin.delete_jobs(asked, by=ANN)
        assert results == [job_id != running for job_id in pending] + [True, False]
        assert store.get_jobs([*kept, failed]) == [None] * (len(kept) + 1)
        assert get(store, running).state is JobState.RUNNING
        assert _audited(app, "job.delete") == sorted([*kept, failed])
        refusal = delete_refusal(running, store.get_job(running))
        assert isinstance(refusal, Conflict)
        assert str(refusal) == f"job {running} is running; a running job cannot be deleted"


def test_cancel_jobs_in_one_call_cancels_pending_and_asks_running_to_stop(url: str) -> None:
    with closing(App(url)) as app:
        store = app.store
        pending = [enqueue_one(store, new_job()) for _ in range(2)]
        running = claim_one(store).id
        waiting = next(job_id for job_id in pending if job_id != running)
        failed = _failed(store)
        asked = [waiting, running, failed, "no-such-job"]
        assert app.admin.cancel_jobs(asked, by=ANN) == [True, True, False, False]
        assert get(store, waiting).state is JobState.CANCELLED
        assert get(store, failed).state is JobState.FAILED
        assert _audited(app, "job.cancel") == sorted([waiting, running])


@pytest.mark.parametrize("verb", ["retry_jobs", "cancel_jobs", "delete_jobs"])
def test_a_bad_id_among_many_changes_nothing(url: str, verb: str) -> None:
    with closing(App(url)) as app:
        failed = _failed(app.store)
        with pytest.raises(InvalidArgument, match="job id must be a non-empty string"):
            getattr(app.admin, verb)([failed, ""], by=ANN)
        assert get(app.store, failed).state is JobState.FAILED
        assert app.store.audit() == ([], None)
