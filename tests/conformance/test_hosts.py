"""Jobs sent to a host: claimed only by workers of that host while one
serving the job's queue is alive, by any worker once none has been seen for
the claim's grace (HostScope), and never in the way of other jobs."""

from __future__ import annotations

import threading

import pytest

from conformance.support import (
    all_jobs,
    enqueue_one,
    fail,
    get,
    new_job,
    wait_until,
    worker_info,
)
from rota import InvalidArgument
from rota.models import ClaimedJob, HostScope
from rota.stores import Store
from rota.stores.roles import claim_or_wait

WEB_A = HostScope("web-a", grace=1.0)
WEB_B = HostScope("web-b", grace=1.0)


def alive(store: Store, host: str, queues: tuple[str, ...] = ("default",)) -> float:
    """Record a heartbeat of a worker of ``host`` serving ``queues``; the
    store's time of it."""
    store.heartbeat(worker_info(f"worker-of-{host}", host=host, queues=queues))
    return store.now()


def claim_as(store: Store, scope: HostScope, limit: int = 1) -> list[ClaimedJob]:
    return store.claim(f"worker-of-{scope.name}", ["default"], limit, scope)


def test_a_job_sent_to_a_live_host_is_claimed_only_by_that_host(store: Store) -> None:
    alive(store, "web-a")
    job_id = enqueue_one(store, new_job(host="web-a"))
    assert get(store, job_id).host == "web-a"
    assert claim_as(store, WEB_B) == []
    assert store.claim("anonymous", ["default"], 1) == []  # the default scope: no host
    assert [job.id for job in claim_as(store, WEB_A)] == [job_id]


def test_jobs_of_other_hosts_are_skipped_not_waited_behind(store: Store) -> None:
    alive(store, "web-a")
    targeted = [enqueue_one(store, new_job(i, host="web-a")) for i in range(3)]
    anywhere = enqueue_one(store, new_job("anywhere"))
    mine = enqueue_one(store, new_job("mine", host="web-b"))
    assert get(store, anywhere).host is None
    assert {job.id for job in claim_as(store, WEB_B, limit=10)} == {anywhere, mine}
    assert [job.id for job in claim_as(store, WEB_A, limit=10)] == targeted


def test_jobs_of_a_host_gone_for_the_grace_go_to_any_host(store: Store) -> None:
    seen = alive(store, "web-a")
    job_id = enqueue_one(store, new_job(host="web-a"))
    assert claim_as(store, WEB_B) == []
    wait_until(store, seen + WEB_B.grace + 0.05)
    assert [job.id for job in claim_as(store, WEB_B)] == [job_id]


def test_a_host_never_seen_on_the_queue_has_the_grace_from_the_send(store: Store) -> None:
    alive(store, "web-z", queues=("other",))  # seen, but not serving this queue
    job_id = enqueue_one(store, new_job(host="web-z"))
    sent = get(store, job_id).enqueued_at
    assert claim_as(store, WEB_B) == []
    wait_until(store, sent + WEB_B.grace + 0.05)
    assert [job.id for job in claim_as(store, WEB_B)] == [job_id]


def test_a_retried_job_keeps_its_host(store: Store) -> None:
    alive(store, "web-a")
    job_id = enqueue_one(store, new_job(host="web-a", max_attempts=2))
    first = claim_as(store, WEB_A)[0]
    assert fail(store, first, retry_in=0.0)
    assert claim_as(store, WEB_B) == []
    again = claim_as(store, WEB_A)
    assert [(job.id, job.attempt) for job in again] == [(job_id, 2)]


def test_a_waiting_worker_of_another_host_is_not_handed_the_job(store: Store, url: str) -> None:
    """A worker waiting for work (registered as idle where the store keeps
    such registrations, and handed new jobs by the send) gets nothing sent to
    a live host that is not its own; that host's worker claims it."""
    alive(store, "web-a")
    got: list[ClaimedJob] = []
    waiting = threading.Event()

    def wait_as_b() -> None:
        waiting.set()
        patient = HostScope("web-b", grace=60.0)  # web-a stays alive for the whole test
        got.extend(claim_or_wait(store, "worker-of-web-b", ["default"], 4, 1.0, patient))

    waiter = threading.Thread(target=wait_as_b)
    waiter.start()
    waiting.wait(5)
    job_id = enqueue_one(store, new_job(host="web-a"))
    waiter.join(10)
    assert not waiter.is_alive()
    assert got == []
    assert [job.id for job in claim_as(store, WEB_A)] == [job_id]


@pytest.mark.parametrize("host", ["", 7])
def test_a_bad_host_is_refused_and_nothing_is_stored(store: Store, host: object) -> None:
    job = new_job(host=host)
    with pytest.raises(InvalidArgument, match="host"):
        store.enqueue([job])
    assert all_jobs(store) == []


def test_a_claim_needs_a_host_scope(store: Store) -> None:
    with pytest.raises(InvalidArgument, match="HostScope"):
        store.claim("w", ["default"], 1, "web-a")  # type: ignore[arg-type]
