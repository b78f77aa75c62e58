"""Queue modes on every store: running, paused, and debug, where a queue
pauses itself at its first failed attempt, in the step that records the
failure, and links the job that failed."""

from __future__ import annotations

import pytest

from conformance.support import (
    claim,
    claim_one,
    enqueue_one,
    fail,
    get,
    new_job,
    run_threads,
    succeed,
    wait_expired,
)
from rota.errors import InvalidArgument
from rota.models import QUEUE_MODES, JobState, Outcome, QueueInfo
from rota.stores import Store


def info(store: Store, queue: str = "default") -> QueueInfo:
    """The queue's record, which must be listed."""
    found = {q.name: q for q in store.queues()}
    assert queue in found, f"queue {queue!r} is not listed: {sorted(found)}"
    return found[queue]


def modes(store: Store) -> list[tuple[str, str, bool, str | None]]:
    return [(q.name, q.mode, q.paused, q.debug_job) for q in store.queues()]


@pytest.mark.parametrize("mode", QUEUE_MODES)
def test_a_mode_is_set_and_read_back(store: Store, mode: str) -> None:
    enqueue_one(store, new_job())
    store.set_queue_mode("default", mode)
    queue = info(store)
    assert (queue.mode, queue.paused, queue.debug_job) == (mode, mode == "paused", None)
    assert queue.counts == {JobState.QUEUED: 1}


def test_a_queue_without_jobs_is_listed_in_any_mode_but_running(store: Store) -> None:
    store.set_queue_mode("ahead", "debug")
    store.set_queue_mode("held", "paused")
    store.set_queue_mode("plain", "running")
    assert modes(store) == [("ahead", "debug", False, None), ("held", "paused", True, None)]


def test_pause_and_resume_are_the_paused_and_running_modes(store: Store) -> None:
    enqueue_one(store, new_job())
    store.set_queue_mode("default", "debug")
    store.pause_queue("default")
    assert info(store).mode == "paused"
    assert claim(store) == []
    store.resume_queue("default")
    assert info(store).mode == "running"
    assert len(claim(store)) == 1


@pytest.mark.parametrize("retry_in", [None, 5.0], ids=["final failure", "retried failure"])
def test_a_debug_queue_pauses_at_its_first_failed_attempt(
    store: Store, retry_in: float | None
) -> None:
    ids = [enqueue_one(store, new_job(i, max_attempts=3)) for i in range(4)]
    store.set_queue_mode("default", "debug")
    first, second = claim(store, limit=2)
    assert [first.id, second.id] == ids[:2]

    assert fail(store, first, retry_in=retry_in)
    queue = info(store)
    assert (queue.mode, queue.paused, queue.debug_job) == ("paused", True, first.id)
    expected = JobState.FAILED if retry_in is None else JobState.SCHEDULED
    assert get(store, first.id).state is expected
    assert claim(store, limit=10) == []

    # a job already running may finish: its failure is recorded, the link stays
    assert fail(store, second)
    assert get(store, second.id).state is JobState.FAILED
    assert info(store).debug_job == first.id
    assert claim(store, limit=10) == []
    assert [get(store, i).state for i in ids[2:]] == [JobState.QUEUED] * 2


def test_claims_racing_the_pausing_failure_stay_in_clock_order(store: Store) -> None:
    """Claimers that fail every job they take race on a debug queue: no job
    is claimed after the failure that paused it, and no failure is recorded
    before that one (the store's own times: each claim's start, each ended
    attempt's history entry)."""
    ids = [result.id for result in store.enqueue([new_job(i) for i in range(120)])]
    store.set_queue_mode("default", "debug")

    def claim_and_fail(n: int) -> None:
        while True:
            taken = claim(store, limit=2, worker=f"w{n}")
            if not taken:
                return
            for job in taken:
                fail(store, job)

    run_threads(4, claim_and_fail)
    queue = info(store)
    assert (queue.mode, queue.debug_job is not None) == ("paused", True)
    found = [job for job in store.get_jobs(ids) if job is not None]
    assert len(found) == len(ids)
    failures = sorted(
        (entry["at"], job.id)
        for job in found
        for entry in job.history
        if entry["event"] == "failed"
    )
    [paused_at] = [at for at, job_id in failures if job_id == queue.debug_job]
    assert failures[0][0] == paused_at, "the failure that paused the queue is the first"
    late = [job.id for job in found if job.started_at is not None and job.started_at > paused_at]
    assert late == [], "no job is claimed after the pause"
    assert any(job.state is JobState.QUEUED for job in found), "the queue stopped short"


def test_the_first_failure_of_one_batch_is_linked(store: Store) -> None:
    for i in range(3):
        enqueue_one(store, new_job(i))
    store.set_queue_mode("default", "debug")
    jobs = claim(store, limit=3)
    outcomes = [Outcome(j.id, j.token, ok=False, error="boom") for j in jobs[1:]]
    assert store.finish([Outcome(jobs[0].id, jobs[0].token, ok=True), *outcomes]) == [True] * 3
    assert info(store).debug_job == jobs[1].id


def test_successes_do_not_pause_a_debug_queue(store: Store) -> None:
    for i in range(2):
        enqueue_one(store, new_job(i))
    store.set_queue_mode("default", "debug")
    assert succeed(store, claim_one(store))
    assert (info(store).mode, info(store).debug_job) == ("debug", None)
    assert len(claim(store)) == 1


def test_a_running_queue_does_not_pause_at_a_failure(store: Store) -> None:
    for i in range(2):
        enqueue_one(store, new_job(i))
    assert fail(store, claim_one(store))
    assert (info(store).mode, info(store).debug_job) == ("running", None)
    assert len(claim(store)) == 1


def test_only_debug_queues_pause(store: Store) -> None:
    enqueue_one(store, new_job(queue="watched"))
    enqueue_one(store, new_job(queue="other"))
    store.set_queue_mode("watched", "debug")
    store.set_queue_mode("other", "debug")
    assert fail(store, claim_one(store, "watched"))
    assert info(store, "watched").mode == "paused"
    assert (info(store, "other").mode, info(store, "other").debug_job) == ("debug", None)


@pytest.mark.parametrize("mode", ["running", "debug"])
def test_resuming_clears_the_link(store: Store, mode: str) -> None:
    ids = [enqueue_one(store, new_job(i)) for i in range(3)]
    store.set_queue_mode("default", "debug")
    assert fail(store, claim_one(store))
    store.set_queue_mode("default", mode)
    assert (info(store).mode, info(store).debug_job) == (mode, None)

    again = claim_one(store)
    assert again.id == ids[1]
    assert fail(store, again)
    queue = info(store)
    if mode == "debug":  # armed again: the next failure pauses it
        assert (queue.mode, queue.debug_job) == ("paused", ids[1])
    else:
        assert (queue.mode, queue.debug_job) == ("running", None)


def test_pausing_a_queue_paused_by_a_failure_keeps_the_link(store: Store) -> None:
    job_id = enqueue_one(store, new_job())
    store.set_queue_mode("default", "debug")
    assert fail(store, claim_one(store))
    store.set_queue_mode("default", "paused")
    store.pause_queue("default")
    assert (info(store).mode, info(store).debug_job) == ("paused", job_id)


def test_a_lost_attempt_does_not_pause_a_debug_queue(store: Store) -> None:
    """A lease that expires (a worker killed, a machine gone) is not the task's
    failure: the job is queued again and the queue keeps claiming."""
    job_id = enqueue_one(store, new_job(lease=0.3, max_lost=3))
    store.set_queue_mode("default", "debug")
    claim_one(store, worker="doomed")
    wait_expired(store, job_id)
    assert store.recover() == [job_id]
    assert (info(store).mode, info(store).debug_job) == ("debug", None)
    assert claim_one(store, worker="healthy").id == job_id


def test_a_job_failed_by_its_last_lost_attempt_pauses_a_debug_queue(store: Store) -> None:
    job_id = enqueue_one(store, new_job(lease=0.3, max_lost=1))
    enqueue_one(store, new_job("next"))
    store.set_queue_mode("default", "debug")
    claim_one(store, worker="doomed")
    wait_expired(store, job_id)
    assert store.recover() == [job_id]
    assert get(store, job_id).state is JobState.FAILED
    assert (info(store).mode, info(store).debug_job) == ("paused", job_id)
    assert claim(store) == []


def test_a_refused_stale_failure_does_not_pause(store: Store) -> None:
    job_id = enqueue_one(store, new_job(lease=0.3, max_lost=3))
    store.set_queue_mode("default", "debug")
    stale = claim_one(store, worker="zombie")
    wait_expired(store, job_id)
    assert store.recover() == [job_id]
    assert not fail(store, stale)
    assert (info(store).mode, info(store).debug_job) == ("debug", None)


@pytest.mark.parametrize("mode", ["stopped", "", "PAUSED", " debug", None, 1, True])
def test_a_bad_mode_is_refused_and_changes_nothing(store: Store, mode: object) -> None:
    enqueue_one(store, new_job())
    store.set_queue_mode("default", "debug")
    before = modes(store)
    with pytest.raises(InvalidArgument, match="queue mode must be one of running, paused, debug"):
        store.set_queue_mode("default", mode)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match="queue mode"):
        store.set_queue_mode("fresh", mode)  # type: ignore[arg-type]
    assert modes(store) == before


@pytest.mark.parametrize("queue", ["", None, 7])
def test_a_bad_queue_name_is_refused(store: Store, queue: object) -> None:
    with pytest.raises(InvalidArgument, match="queue"):
        store.set_queue_mode(queue, "debug")  # type: ignore[arg-type]
    assert store.queues() == []
