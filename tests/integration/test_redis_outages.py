"""Redis outages against a redis-server the test owns: back-to-back outages
each get the whole ``retry_for`` budget and are logged at both ends; a server
that never answers fails a call within ``retry_for``; a job whose hand-off to
an idle worker is cut in transit still reaches that worker at once."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from conformance.support import get, lease, new_job
from helpers import wait_for
from integration.redis_servers import PrivateRedis, Proxy, private_redis, proxy_to
from rota.errors import StoreUnavailable
from rota.models import ClaimedJob, JobState
from rota.stores import open_store

__all__ = ["private_redis", "proxy_to"]  # fixtures

OUTAGE = 2.0  # seconds each outage lasts; the budget is 5


def _log_count(caplog: pytest.LogCaptureFixture, text: str) -> int:
    return sum(text in r.getMessage() for r in caplog.records if r.name == "rota.stores.redis")


def _in_thread(call: Callable[[], Any]) -> tuple[threading.Thread, list[Any]]:
    out: list[Any] = []

    def run() -> None:
        try:
            out.append(call())
        except BaseException as exc:  # reported by the test
            out.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, out


def test_back_to_back_outages_each_get_the_whole_budget_and_are_logged(
    private_redis: type[PrivateRedis], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="rota.stores.redis")
    server = private_redis()
    store = open_store(f"redis://{server.address}/0?retry_for=5")
    try:
        store.enqueue([new_job(0)])
        for outage in (1, 2):  # the second starts right after the first ends
            server.stop()  # without persistence: the restarted server is empty
            began = time.monotonic()
            thread, out = _in_thread(lambda n=outage: store.enqueue([new_job(n)]))
            wait_for(lambda n=outage: _log_count(caplog, "lost the connection") == n, what="log")
            wait_for(lambda t=began: time.monotonic() - t >= OUTAGE, timeout=OUTAGE + 1)
            server.start()
            thread.join(10)
            assert not thread.is_alive()
            assert not isinstance(out[0], BaseException), out[0]
            assert get(store, out[0][0].id).state is JobState.QUEUED  # sent after the restart
            wait_for(lambda n=outage: _log_count(caplog, "reconnected") == n, what="log")
        assert _log_count(caplog, "lost the connection") == 2
        assert _log_count(caplog, "reconnected") == 2
    finally:
        store.close()


@pytest.mark.parametrize("verb", ["now", "enqueue", "claim_wait"])
def test_a_server_that_never_answers_fails_a_call_within_retry_for(
    private_redis: type[PrivateRedis], proxy_to: type[Proxy], verb: str
) -> None:
    server = private_redis()
    proxy = proxy_to(server.port)
    store = open_store(f"redis://127.0.0.1:{proxy.port}/0?retry_for=2")
    try:
        store.now()  # connected, checked and answering
        proxy.hold.set()
        calls: dict[str, Callable[[], object]] = {
            "now": store.now,
            "enqueue": lambda: store.enqueue([new_job(1)]),
            "claim_wait": lambda: store.claim_wait("w", ["default"], 1, 1.0),
        }
        began = time.monotonic()
        with pytest.raises(StoreUnavailable) as caught:
            calls[verb]()
        took = time.monotonic() - began
        assert "unreachable" in str(caught.value)
        # the budget, plus the 1 s block of a wait, plus a 0.5 s margin
        assert 2.0 <= took <= 2.5 + (1.0 if verb == "claim_wait" else 0.0), took
    finally:
        store.close()


def test_a_hand_off_cut_in_transit_still_reaches_the_idle_worker(
    private_redis: type[PrivateRedis], proxy_to: type[Proxy]
) -> None:
    server = private_redis()
    proxy = proxy_to(server.port)
    namespace = "cut"
    worker = open_store(f"redis://127.0.0.1:{proxy.port}/0?namespace={namespace}&retry_for=10")
    producer = open_store(f"redis://{server.address}/0?namespace={namespace}")
    try:
        thread, out = _in_thread(lambda: worker.claim_wait("w1", ["default"], 4, 20.0))
        wait_for(proxy.waiting.is_set, what="the worker to wait on its inbox")
        proxy.cut_armed.set()
        sent = time.monotonic()
        job_id = producer.enqueue([new_job("handed")])[0].id
        thread.join(10)
        took = time.monotonic() - sent
        assert proxy.cut_done.is_set(), "the reply was not cut"
        assert not thread.is_alive()
        jobs = out[0]
        assert not isinstance(jobs, BaseException), jobs
        assert [j.id for j in jobs] == [job_id]
        assert took < 5.0, took  # not a lease (30 s) later
        job: ClaimedJob = jobs[0]
        assert (job.attempt, job.lost) == (1, 0)
        stored = get(producer, job_id)
        assert (stored.state, stored.lost, stored.attempt) == (JobState.RUNNING, 0, 1)
        assert worker.extend([lease(job)]) == ["held"]  # the worker holds the lease
        assert worker.claim_wait("w1", ["default"], 4, 0.2) == []  # and gets it only once
    finally:
        worker.close()
        producer.close()
        server.stop()
