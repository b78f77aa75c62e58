"""Dispatch by load (rota.worker.load): the wait before a claim grows with
how much busier a worker is than its idlest peer, and is nothing when no
peer could take the work."""

from __future__ import annotations

from dataclasses import replace

import pytest

from rota.models import WorkerInfo
from rota.worker.load import YIELD_AT_FULL_LOAD, LoadMeter, claim_delay, idlest_peer_load


def worker(name: str, load: float | None, **fields: object) -> WorkerInfo:
    info = WorkerInfo(
        id=name,
        host="h",
        pid=1,
        queues=("default",),
        concurrency=4,
        mode="threads",
        running=0,
        started_at=0.0,
        heartbeat_at=100.0,
        load=load,
    )
    return replace(info, **fields)  # type: ignore[arg-type]


def test_a_busier_worker_waits_in_proportion_to_the_gap() -> None:
    assert claim_delay(0.9, 0.1, running=1) == pytest.approx(0.8 * YIELD_AT_FULL_LOAD)
    assert claim_delay(0.5, 0.5, running=1) == 0.0
    assert claim_delay(0.1, 0.9, running=1) == 0.0  # the idler one never waits
    assert claim_delay(1.0, None, running=1) == 0.0  # alone: no wait at all
    assert claim_delay(0.9, 0.1, running=0) == 0.0  # running nothing: its load is past work


def test_a_store_that_polls_for_work_lengthens_the_wait_by_its_whole_pace() -> None:
    # the idler peer sees new work only at its next look (MySQL's wake_poll):
    # however small the gap, the busier one waits for that look
    assert claim_delay(0.9, 0.1, 1, wake_latency=0.1) == pytest.approx(
        0.8 * YIELD_AT_FULL_LOAD + 0.1
    )
    assert claim_delay(0.2, 0.1, 1, wake_latency=0.1) == pytest.approx(
        0.1 * YIELD_AT_FULL_LOAD + 0.1
    )
    assert claim_delay(0.1, 0.9, 1, wake_latency=0.1) == 0.0
    assert claim_delay(0.11, 0.1, 1, wake_latency=0.1) == 0.0  # within MIN_GAP: noise


def test_the_idlest_peer_is_an_idle_one_that_could_take_the_work() -> None:
    me = worker("me", 0.8)
    peers = [
        me,
        worker("busy", 0.6),
        worker("full", 0.0, running=4),  # every slot taken (or claimed for)
        worker("working", 0.3, running=3),  # a slot free: could take more
        # between two full claims of a backlog: a slot free, but the queues
        # give it all it asks for, so waiting for it would only leave work undone
        worker("sharing", 0.1, running=2, claimed_short=False),
        worker("elsewhere", 0.0, queues=("other",)),
        worker("stopping", 0.0, stopping=True),
        worker("gated", 0.0, holding_back=True),
        worker("silent", 0.0, heartbeat_at=50.0),  # last seen long before me
        worker("new", None),  # no reading yet
    ]
    assert idlest_peer_load("me", ("default",), peers, stale_after=15.0) == 0.3
    assert idlest_peer_load("me", ("default",), [me], stale_after=15.0) is None
    assert idlest_peer_load("gone", ("default",), peers, stale_after=15.0) is None


class _Times:
    def __init__(self) -> None:
        self.user, self.system = 0.0, 0.0


class _Process:
    def __init__(self) -> None:
        self.times = _Times()

    def cpu_times(self) -> _Times:
        return self.times


def test_the_load_is_the_share_of_every_core_since_the_last_reading() -> None:
    now = [0.0]
    process = _Process()
    meter = LoadMeter(process, cores=2, clock=lambda: now[0])  # type: ignore[arg-type]
    now[0], process.times.user = 1.0, 1.0  # one core busy for a second of two cores
    assert meter.read() == pytest.approx(0.5)
    now[0], process.times.system = 2.0, 0.5  # and then half a core
    assert meter.read() == pytest.approx(0.25)
    assert meter.read() == 0.0  # no time passed


def test_a_heartbeat_record_of_a_newer_worker_is_read_without_its_new_fields() -> None:
    record = {
        "id": "w",
        "host": "h",
        "pid": 1,
        "queues": ["default"],
        "concurrency": 4,
        "mode": "threads",
        "running": 0,
        "started_at": 0.0,
        "load": 0.5,
        "a_field_of_a_later_version": 1,
    }
    info = WorkerInfo.from_record(record)
    assert (info.queues, info.load) == (("default",), 0.5)
