"""Dispatch by load, with real workers: of two workers beside each other, the
one busy burning CPU claims markedly fewer new jobs than the idle one. The
jobs come a few at a time, as periodic work does; a burst larger than the
idle worker's free slots is a backlog, which both share."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from helpers import wait_for
from procs import Processes
from rota import App
from rota.models import JobState
from rota.stores import Store

ROUNDS, PER_ROUND = 80, 3
JOBS = ROUNDS * PER_ROUND


def workers_by_queue(store: Store) -> dict[str, tuple[str, float | None]]:
    """Each worker's first queue -> (its id, its reported load)."""
    return {w.queues[-1]: (w.id, w.load) for w in store.workers()}


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
            return busy is not None and idle is not None and busy > 0.2 and idle < 0.1

        wait_for(loads_reported, timeout=30, what="both workers to report their load")
        # one more heartbeat round, so the busy worker has read the idle one's record
        busy_id = workers_by_queue(store)["burn"][0]
        beat = next(w.heartbeat_at for w in store.workers() if w.id == busy_id)
        wait_for(
            lambda: next(w.heartbeat_at for w in store.workers() if w.id == busy_id) > beat,
            timeout=20,
            what="the busy worker's next heartbeat",
        )
        ids: list[str] = []
        for _ in range(ROUNDS):  # each round once the last one is done
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
