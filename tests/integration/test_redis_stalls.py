"""A Redis server that stalls (SIGSTOP) for longer than ``retry_for``: the
call gives up with ``StoreUnavailable``, and when the server resumes it runs
the request it had received, with no one left to read the reply.

The store's next claim returns what such a claim took, its next finish
takes the answer such a finish got (not "refused"), and a send that gave up
so raises ``CommitInDoubt``: the job may be (here: is) stored. With a real
worker, a stall longer than ``retry_for`` costs no lease and no lost attempt.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import orjson
import pytest

from conformance.support import get, new_job
from helpers import appended_lines, wait_for
from integration.redis_servers import PrivateRedis, private_redis
from procs import Processes
from rota.errors import CommitInDoubt, StoreUnavailable
from rota.models import ClaimedJob, JobState, LeaseRef, Outcome
from rota.stores import Store, open_store
from rota.stores.redis import RedisStore

__all__ = ["private_redis"]  # fixture

RETRY_FOR = 1.0  # the stalled calls' budget


@pytest.fixture
def stalling(private_redis: type[PrivateRedis]) -> Iterator[tuple[PrivateRedis, Store, Store]]:
    """A private server, a store that gives up after RETRY_FOR, and one to look
    with (opened after each stall, so its calls never wait on one)."""
    server = private_redis()
    url = f"redis://{server.address}/0?namespace=stall"
    store = open_store(f"{url}&retry_for={RETRY_FOR:g}")
    looker = open_store(url)
    store.recover()  # a script call: the stall cuts a call on an open connection
    try:
        yield server, store, looker
    finally:
        server.resume()  # (a stopped server is killed all the same at teardown)
        store.close()
        looker.close()


def _gives_up(server: PrivateRedis, call: Callable[[], object]) -> StoreUnavailable:
    """Run ``call`` while the server is stalled; it must give up. The server
    runs again afterwards."""
    server.pause()
    try:
        with pytest.raises(StoreUnavailable) as caught:
            call()
    finally:
        server.resume()
    return caught.value


def _state(store: Store, job_id: str) -> JobState:
    return get(store, job_id).state


@pytest.mark.parametrize("verb", ["claim", "claim_wait"])
def test_a_claim_that_gave_up_and_ran_late_is_returned_by_the_next_claim(
    stalling: tuple[PrivateRedis, Store, Store], verb: str
) -> None:
    server, store, looker = stalling
    assert isinstance(store, RedisStore)
    ids = [store.enqueue([new_job(i, lease=60.0)])[0].id for i in range(3)]

    def claim(limit: int) -> list[ClaimedJob]:
        if verb == "claim":
            return store.claim("w1", ["default"], limit)
        return store.claim_wait("w1", ["default"], limit, 0.5)

    _gives_up(server, lambda: claim(2))
    # the server runs the claim it had read: two jobs running, their claimer gone
    wait_for(lambda: [_state(looker, i) for i in ids].count(JobState.RUNNING) == 2, what="late")
    late = {i for i in ids if _state(looker, i) is JobState.RUNNING}

    again = claim(3)
    assert {j.id for j in again} == late  # what the late claim took, and only that
    assert store.extend([LeaseRef(j.id, j.token) for j in again]) == ["held"] * 2  # its tokens
    rest = claim(3)
    assert [j.id for j in rest] == [i for i in ids if i not in late]
    assert claim(3) == []
    assert all(get(looker, i).lost == 0 for i in ids)
    outcomes = [Outcome(j.id, j.token, ok=True) for j in [*again, *rest]]
    assert store.finish(outcomes) == [True] * 3


def test_jobs_of_a_late_claim_past_the_next_claims_limit_go_back_to_the_queue(
    stalling: tuple[PrivateRedis, Store, Store],
) -> None:
    server, store, looker = stalling
    ids = [store.enqueue([new_job(i)])[0].id for i in range(3)]
    _gives_up(server, lambda: store.claim("w1", ["default"], 3))
    wait_for(lambda: all(_state(looker, i) is JobState.RUNNING for i in ids), what="late")

    (got,) = store.claim("w1", ["default"], 1)  # the worker has one free slot now
    others = {i for i in ids if i != got.id}
    assert {_state(looker, i) for i in others} == {JobState.QUEUED}
    assert {j.id for j in store.claim("w1", ["default"], 3)} == others
    assert all(get(looker, i).lost == 0 for i in ids)


def test_a_worker_that_leaves_gives_back_what_a_late_claim_took(
    stalling: tuple[PrivateRedis, Store, Store],
) -> None:
    server, store, looker = stalling
    job_id = store.enqueue([new_job("x")])[0].id
    _gives_up(server, lambda: store.claim("w1", ["default"], 4))
    wait_for(lambda: _state(looker, job_id) is JobState.RUNNING, what="the late claim")
    store.remove_worker("w1")
    assert (_state(looker, job_id), get(looker, job_id).lost) == (JobState.QUEUED, 0)


def test_a_claim_that_gave_up_before_running_runs_when_sent_again(
    stalling: tuple[PrivateRedis, Store, Store],
) -> None:
    server, store, looker = stalling
    job_id = store.enqueue([new_job("x")])[0].id
    server.stop()  # refused from the start: the claim never reached a server
    with pytest.raises(StoreUnavailable):
        store.claim("w1", ["default"], 4)
    server.start()  # (empty: no persistence) the same port
    assert looker.get_job(job_id) is None
    job_id = store.enqueue([new_job("y")])[0].id
    assert [j.id for j in store.claim("w1", ["default"], 4)] == [job_id]


def test_a_finish_that_gave_up_and_ran_late_is_not_refused_next_time(
    stalling: tuple[PrivateRedis, Store, Store],
) -> None:
    server, store, looker = stalling
    for i in range(3):
        store.enqueue([new_job(i)])
    first, second, third = store.claim("w1", ["default"], 3)
    done = [Outcome(j.id, j.token, ok=True, result=orjson.dumps(j.id)) for j in (first, second)]

    _gives_up(server, lambda: store.finish(done))
    wait_for(lambda: _state(looker, first.id) is JobState.SUCCEEDED, what="the late finish")

    # reported again with one more outcome: each answered, none refused
    more = [*done, Outcome(third.id, third.token, ok=False, error="ValueError: no")]
    assert store.finish(more) == [True, True, True]
    for job in (first, second):
        stored = get(looker, job.id)
        assert (stored.state, stored.result, stored.attempt) == (JobState.SUCCEEDED, job.id, 1)
    assert _state(looker, third.id) is JobState.FAILED


def test_a_send_that_gave_up_after_reaching_the_server_raises_commit_in_doubt(
    stalling: tuple[PrivateRedis, Store, Store],
) -> None:
    server, store, looker = stalling
    job = new_job("maybe")
    caught = _gives_up(server, lambda: store.enqueue([job]))
    assert isinstance(caught, CommitInDoubt)
    assert "may have been stored" in str(caught)
    wait_for(lambda: looker.get_job(job.id) is not None, what="the late send")  # it was


def test_a_send_that_never_reached_the_server_is_plainly_unavailable(
    private_redis: type[PrivateRedis],
) -> None:
    server = private_redis()
    url = f"redis://{server.address}/0?namespace=stall&retry_for={RETRY_FOR:g}"
    server.stop()
    store = open_store(url)  # never connected: every attempt is refused
    try:
        with pytest.raises(StoreUnavailable) as caught:
            store.enqueue([new_job("never")])
        assert not isinstance(caught.value, CommitInDoubt)
    finally:
        store.close()


JOBS = 400


@pytest.mark.slow
def test_a_worker_rides_out_a_stall_longer_than_retry_for_without_a_lost_lease(
    private_redis: type[PrivateRedis],
    processes: Processes,
    app_path: Callable[[str], str],
    tmp_path: Path,
) -> None:
    server = private_redis()
    url = f"redis://{server.address}/0?namespace=stalled&retry_for=2"
    log = tmp_path / "executions.log"
    store = open_store(url)
    try:
        ids = [
            r.id
            for r in store.enqueue(
                [new_job(i, 0.05, task="record", lease=60.0) for i in range(JOBS)]
            )
        ]
        env = {"ROTA_TEST_LOG": str(log), "ROTA_TEST_LEASE": "60"}
        args = ("worker", app_path("counting"), "--url", url, "--concurrency", "4")
        worker = processes.rota(*args, env=env)
        wait_for(lambda: len(appended_lines(log)) >= 40, 30, 0.01, "the worker to get going")
        server.pause()
        time.sleep(5.0)  # longer than retry_for: claims and finishes give up meanwhile
        server.resume()

        def finished() -> bool:
            return all(j is not None and j.state is JobState.SUCCEEDED for j in store.get_jobs(ids))

        wait_for(finished, 50, 0.1, "every job to succeed, without waiting out a lease")
        events = [[h["event"] for h in j.history] for j in store.get_jobs(ids) if j]
        assert [e for e in events if "lost" in e] == []
        assert all(j and j.lost == 0 for j in store.get_jobs(ids))
        assert worker.poll() is None, processes.output(worker)
        out = processes.output(worker)
        assert "refused" not in out, out
        assert "claim failed" in out, out  # the stall did cut calls
    finally:
        store.close()
