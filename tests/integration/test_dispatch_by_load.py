"""Dispatch by load, with real workers: of two workers beside each other, the
one busy burning CPU claims markedly fewer new jobs than the idle one. The
jobs come a few at a time, as periodic work does; a burst larger than the
idle worker's free slots is a backlog, which both share."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable

import pytest

from helpers import wait_for
from procs import Processes
from rota import App
from rota.models import JobState, WorkerInfo
from rota.stores import Store
from rota.worker import Worker
from rota.worker.load import YIELD_AT_FULL_LOAD

ROUNDS, PER_ROUND = 80, 3
JOBS = ROUNDS * PER_ROUND


def workers_by_queue(store: Store) -> dict[str, tuple[str, float | None]]:
    """Each worker's first queue -> (its id, its reported load)."""
    return {w.queues[-1]: (w.id, w.load) for w in store.workers()}


@pytest.mark.alone  # it reads the CPU load of its workers: run with no other test
def test_a_busy_worker_leaves_new_jobs_to_an_idle_one(
    url: str, store: Store, processes: Processes, app_path: Callable[[str], str]
) -> None:
    common = ("--url", url, "--concurrency", "4", "--log-level", "WARNING")
    processes.rota("worker", app_path("loaded"), "--queues", "default,burn", *common)
    processes.rota("worker", app_path("loaded"), "--queues", "default", *common)
    sender = App(url)
    sender.task(name="burn", queue="burn")(lambda seconds: None)
    sender.task(name="short")(lambda: None)
    try:
        burner = sender.tasks["burn"].send(60.0)
        wait_for(
            lambda: store.get_job(burner.id).state is JobState.RUNNING,  # type: ignore[union-attr]
            timeout=30,
            what="the burner to run",
        )

        def loads_reported() -> bool:
            seen = workers_by_queue(store)
            busy, idle = seen.get("burn", ("", None))[1], seen.get("default", ("", None))[1]
            # (on a machine busy with other work the idle worker's load is not 0)
            return busy is not None and idle is not None and busy > 0.2 and idle < busy / 2

        wait_for(loads_reported, timeout=30, what="both workers to report their load")
        # one more heartbeat round, so the busy worker has read the idle one's record
        busy_id = workers_by_queue(store)["burn"][0]
        beat = next(w.heartbeat_at for w in store.workers() if w.id == busy_id)
        wait_for(
            lambda: next(w.heartbeat_at for w in store.workers() if w.id == busy_id) > beat,
            timeout=20,
            what="the busy worker's next heartbeat",
        )
        # Periodic work comes at a pace. On a store without pushed wake-ups a
        # round follows the last no sooner than the busy worker's longest wait
        # before a claim: sent within that wait, it could take the round as
        # the wait ends, before the idle worker's next look (docs/performance.md,
        # "Dispatch by load").
        pace = YIELD_AT_FULL_LOAD + store.wake_latency if store.wake_latency else 0.0
        ids: list[str] = []
        next_round = time.monotonic()
        for _ in range(ROUNDS):  # each round once the last one is done
            time.sleep(max(0.0, next_round - time.monotonic()))  # (the pace, not a wait)
            next_round = time.monotonic() + pace
            sent = [h.id for h in sender.tasks["short"].send_many([()] * PER_ROUND)]
            ids += sent

            def done(sent: list[str] = sent) -> bool:
                jobs = store.get_jobs(sent)
                return all(j is not None and j.state is JobState.SUCCEEDED for j in jobs)

            wait_for(done, timeout=30, what="a round of short jobs")
        ran = Counter(
            entry["worker"]
            for job in store.get_jobs(ids)
            if job is not None
            for entry in job.history
            if entry["event"] == "succeeded"
        )
        busy = ran[busy_id]
        idle = sum(ran.values()) - busy
        print(f"{store.kind}: the idle worker ran {idle} jobs, the busy one {busy}")
        assert idle + busy == JOBS
        assert idle >= 2 * busy, f"the idle worker ran {idle} jobs, the busy one {busy}"
    finally:
        sender.close()


def test_a_worker_with_a_backlog_is_no_idler_peer(url: str, store: Store) -> None:
    """A worker whose claims come back full reports no room for more work
    (``claimed_short``), even between two claims with a slot free, so its
    peers sharing the backlog never wait for it; once the queue runs dry it
    does."""
    app = App(url)
    app.task(name="nap")(lambda: time.sleep(0.02))
    worker = Worker(app, queues=["default"], concurrency=2, heartbeat=0.2)

    def record() -> WorkerInfo | None:
        return next((w for w in store.workers() if w.id == worker.id), None)

    handles = app.tasks["nap"].send_many([()] * 200)  # 2 s of work for two slots
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    try:
        wait_for(
            lambda: (r := record()) is not None and r.processed > 0 and not r.claimed_short,
            timeout=30,
            what="a heartbeat saying the queue gives all the worker asks for",
        )
        left = store.get_jobs([h.id for h in handles])
        assert any(j is not None and j.state is not JobState.SUCCEEDED for j in left)
        wait_for(
            lambda: (r := record()) is not None and r.processed == 200 and r.claimed_short,
            timeout=60,
            what="a heartbeat saying the worker could take more, once the queue is empty",
        )
    finally:
        worker.stop()
        thread.join(30)
        app.close()
