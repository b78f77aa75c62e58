"""The thread pool claiming for itself (leader and followers), with a claim
function in place of a worker's: which thread runs what, how many slots run
at once, and when it stops."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Iterator

import orjson
import pytest

from claims import Claims
from helpers import wait_for
from rota import App
from rota.models import ClaimedJob
from rota.worker.executors import ThreadExecutor
from rota.worker.runner import Result
from rota.worker.turns import OVERLAP, core_wait

app = App("sqlite:///:memory:")
ran_on: dict[int, str] = {}  # job number -> thread name
release = threading.Event()
at_once = {"now": 0, "most": 0}  # jobs running at once, and the most seen
counting = threading.Lock()


@app.task(name="record")
def record(n: int, block: bool) -> None:
    ran_on[n] = threading.current_thread().name
    if block:
        assert release.wait(10)


@app.task(name="wait_briefly")
def wait_briefly(seconds: float) -> None:
    """A short job that waits on something (as on a socket), counted."""
    with counting:
        at_once["now"] += 1
        at_once["most"] = max(at_once["most"], at_once["now"])
    time.sleep(seconds)
    with counting:
        at_once["now"] -= 1


def job(n: int, *, block: bool = False) -> ClaimedJob:
    return ClaimedJob(
        id=f"j{n}",
        task="record",
        queue="default",
        payload=orjson.dumps({"args": [n, block], "kwargs": {}}),
        attempt=1,
        max_attempts=1,
        lost=0,
        token="t",
        lease=30.0,
        timeout=None,
        enqueued_at=0.0,
        run_at=0.0,
        started_at=0.0,
    )


def brief(n: int, seconds: float) -> ClaimedJob:
    return ClaimedJob(
        id=f"b{n}", task="wait_briefly", queue="default",
        payload=orjson.dumps({"args": [seconds], "kwargs": {}}),
        attempt=1, max_attempts=1, lost=0, token="t", lease=30.0, timeout=None,
        enqueued_at=0.0, run_at=0.0, started_at=0.0,
    )  # fmt: skip


@pytest.fixture
def done() -> Iterator[dict[str, Result]]:
    ran_on.clear()
    release.clear()
    at_once.update(now=0, most=0)
    yield {}
    release.set()


def pool(
    claims: Claims, done: dict[str, Result], size: int, *, short: bool = False
) -> ThreadExecutor:
    executor = ThreadExecutor(app, size, lambda j, r: done.__setitem__(j.id, r))
    executor.short_jobs = lambda: short  # the worker's moving average says so
    executor.start(claims)
    return executor


def test_every_claimed_job_runs_once_and_the_claimer_runs_its_first(
    done: dict[str, Result],
) -> None:
    claims = Claims([[job(0), job(1), job(2)], [job(3)], [job(4), job(5)]])
    executor = pool(claims, done, 4)
    wait_for(lambda: len(done) == 6)
    assert all(r.ok for r in done.values())
    claimers = [thread for thread, _ in claims.calls]
    assert ran_on[0] == claimers[0]  # no hand-over to another thread
    executor.stop_claiming()
    executor.stop()


def test_no_more_jobs_run_at_once_than_there_are_slots(done: dict[str, Result]) -> None:
    # Both slots run blocked jobs; the thread beside them claims the third
    # job, which waits for a slot.
    claims = Claims([[job(0, block=True), job(1, block=True)], [job(2)]])
    executor = pool(claims, done, 2)
    wait_for(lambda: len(ran_on) == 2)
    wait_for(lambda: executor.busy() == 3)  # two running, one waiting
    assert 2 not in ran_on
    release.set()
    wait_for(lambda: len(done) == 3)
    executor.stop_claiming()
    executor.stop()


def test_an_abandoned_job_s_slot_runs_the_next_job_while_its_thread_is_stuck(
    done: dict[str, Result],
) -> None:
    stuck = job(0, block=True)
    claims = Claims([[stuck], [dataclasses.replace(job(1), token="t1")]])
    executor = pool(claims, done, 1)
    wait_for(lambda: 0 in ran_on)
    wait_for(lambda: not claims.batches)  # job 1 waits for the one slot
    assert executor.abandon(stuck)
    wait_for(lambda: "j1" in done)  # a fresh thread ran it; job 0 still blocks
    assert "j0" not in done
    release.set()
    executor.stop_claiming()
    executor.stop()


def test_a_failing_claim_costs_a_retry_not_a_thread(done: dict[str, Result]) -> None:
    claims = Claims([])
    claims.fail_next = True
    executor = pool(claims, done, 1)
    wait_for(lambda: claims.idle.is_set())  # the only thread claims again after the error
    claims.batches.append([job(7)])
    wait_for(lambda: "j7" in done)
    executor.stop_claiming()
    executor.stop()


def test_stop_claiming_waits_for_the_claim_under_way(done: dict[str, Result]) -> None:
    claims = Claims([])
    executor = pool(claims, done, 2)
    wait_for(lambda: claims.idle.is_set())
    executor.stop_claiming()
    assert claims.under_way == 0  # it waited for the claim under way
    executor.stop()


def stop_with_a_thread_parked_at_the_limit(done: dict[str, Result]) -> None:
    """One slot, two threads: the slot runs a blocked job while a second job
    waits, so the other thread parks at the limit as the pool is stopped;
    then both jobs end."""
    release.clear()
    done.clear()
    claims = Claims([[job(0, block=True), dataclasses.replace(job(1), token="t1")]])
    executor = pool(claims, done, 1)
    wait_for(lambda: executor.busy() == 2)  # one running, one waiting
    executor.stop_claiming()
    executor.stop()
    release.set()
    wait_for(lambda: len(done) == 2)


def test_every_thread_ends_once_stopped_even_one_parked_at_the_limit(
    done: dict[str, Result],
) -> None:
    for _ in range(3):  # whether it is parked then depends on the threads' timing
        stop_with_a_thread_parked_at_the_limit(done)
        wait_for(
            lambda: not [t for t in threading.enumerate() if t.name.startswith("rota-slot-")],
            what="every slot thread to end",
        )


def batches(seconds: float, jobs: int = 400) -> Claims:
    return Claims([[brief(n, seconds) for n in range(i, i + 50)] for i in range(0, jobs, 50)])


def test_short_jobs_run_on_the_target_s_slots_at_once(
    done: dict[str, Result], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Whatever the process's CPU use, the target stays: only the slots that
    # keep the jobs overlapping run, and the others stay parked.
    monkeypatch.setattr("rota.worker.turns.IDLE_BELOW", 0.0)
    monkeypatch.setattr("rota.worker.turns.PARALLEL_ABOVE", float("inf"))
    executor = pool(batches(0.0002), done, 8, short=True)
    wait_for(lambda: len(done) == 400)
    executor.stop_claiming()
    executor.stop()
    assert all(r.ok for r in done.values())
    assert at_once["most"] <= OVERLAP


def test_short_jobs_that_mostly_wait_run_on_all_slots(done: dict[str, Result]) -> None:
    # 1 ms waiting on something against microseconds of CPU: the process
    # idles while jobs wait, so the target doubles.
    executor = pool(batches(0.001), done, 8, short=True)
    wait_for(lambda: len(done) == 400)
    executor.stop_claiming()
    executor.stop()
    assert at_once["most"] >= 7  # every slot, but for one that may be claiming the next batch


class BusyClock:
    """The pool's clock (``rota.worker.turns.time``) for a process that uses
    ``share`` of a core: its CPU time is that share of the time of the
    latest wall-clock reading, so every look at its CPU use finds exactly
    ``share``, however long the system keeps the looking thread from running
    between its two readings."""

    sleep = staticmethod(time.sleep)

    def __init__(self, share: float) -> None:
        self.share = share
        self.last = time.monotonic()

    def monotonic(self) -> float:
        self.last = time.monotonic()
        return self.last

    def process_time(self) -> float:
        return self.last * self.share


def test_while_the_interpreter_s_lock_is_the_limit_the_target_falls_back(
    done: dict[str, Result], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A process busy a whole core while jobs wait: more slots would only
    # take turns on the lock.
    # (A look counts only within a batch: batches enough that two looks come
    # in one, however fast this machine runs them.)
    monkeypatch.setattr("rota.worker.turns.time", BusyClock(1.0))
    executor = pool(batches(0.0002, jobs=4000), done, 8, short=True)
    executor._turns.target = 8
    wait_for(lambda: len(done) == 4000)
    executor.stop_claiming()
    executor.stop()
    assert executor._turns.target == OVERLAP


@pytest.mark.parametrize(("core_wait", "most"), [(0.0, 8), (0.7, OVERLAP)])
def test_a_process_short_of_cores_is_not_taken_for_one_that_waits_on_io(
    core_wait: float, most: int, done: dict[str, Result], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A third of a core used while jobs wait: idle, unless its threads spent
    # most of their runnable time waiting for a core (neighbours had them),
    # when it would use one whole, and more slots would only share the lock.
    monkeypatch.setattr("rota.worker.turns.time", BusyClock(1 / 3))
    monkeypatch.setattr("rota.worker.turns.core_wait", lambda: core_wait)
    executor = pool(batches(0.0002), done, 8, short=True)
    wait_for(lambda: len(done) == 400)
    executor.stop_claiming()
    executor.stop()
    assert (executor._turns.target >= 8) == (most == 8)
    assert at_once["most"] <= most


def test_core_wait_is_a_share_of_the_thread_s_runnable_time() -> None:
    shares: list[float] = []

    def spin() -> None:
        shares.append(core_wait())  # the first call has nothing to compare with
        until = time.monotonic() + 0.05
        while time.monotonic() < until:
            pass
        shares.append(core_wait())

    thread = threading.Thread(target=spin)
    thread.start()
    thread.join()
    assert shares[0] == 0.0
    assert 0.0 <= shares[1] <= 0.9


def test_while_jobs_are_long_every_slot_runs_at_once(done: dict[str, Result]) -> None:
    claims = Claims([[job(n, block=True) for n in range(8)]])
    executor = pool(claims, done, 8, short=False)
    wait_for(lambda: len(ran_on) == 8)
    release.set()
    wait_for(lambda: len(done) == 8)
    executor.stop_claiming()
    executor.stop()
    assert len(set(ran_on.values())) == 8


def test_a_job_left_waiting_beside_blocked_ones_starts_while_jobs_are_short(
    done: dict[str, Result],
) -> None:
    # Two slots run blocked jobs; the process idles, so the target grows
    # and the third job starts within a few looks, not once one returns.
    claims = Claims([[job(n, block=True) for n in range(3)]])
    executor = pool(claims, done, 8, short=True)
    wait_for(lambda: len(ran_on) == 3, timeout=5)
    release.set()
    wait_for(lambda: len(done) == 3)
    executor.stop_claiming()
    executor.stop()


@pytest.mark.parametrize("short", [True, False], ids=["short-jobs", "long-jobs"])
def test_a_job_sent_while_the_claimed_ones_block_is_claimed_by_an_idle_slot(
    done: dict[str, Result], short: bool
) -> None:
    # The claimer runs the first of two jobs and passes the turn on; the slot
    # it wakes takes the second. The turn must still reach an idle slot: a
    # job sent while both block (as a page waiting for its robots.txt job)
    # starts on a third slot, not once one of them returns.
    claims = Claims([])
    executor = pool(claims, done, 4, short=short)
    wait_for(lambda: claims.idle.is_set())  # one slot claims, the others are parked
    claims.batches.append([job(0, block=True), job(1, block=True)])
    wait_for(lambda: len(ran_on) == 2, timeout=5)
    claims.batches.append([job(2)])
    wait_for(lambda: "j2" in done, timeout=5)
    assert len(done) == 1, "the blocked jobs still run"
    release.set()
    wait_for(lambda: len(done) == 3)
    executor.stop_claiming()
    executor.stop()
