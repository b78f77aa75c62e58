"""Jobs sent to a host, with real workers: `rota send --host` and
`task.options(host=...)` run only on the worker started with that host name
while it is alive, and on the other worker once it has been gone for the
other's --host-grace."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Callable

from helpers import wait_for
from procs import ROTA, Processes
from rota import App
from rota.models import JobState
from rota.stores import Store

GRACE = 6.0  # longer than a worker's 5 s heartbeat interval, as it must be


def ran_on(store: Store, job_id: str) -> str | None:
    """The host of the worker that ran the job, once it succeeded."""
    job = store.get_job(job_id)
    if job is None or job.state is not JobState.SUCCEEDED:
        return None
    return next(e["host"] for e in job.history if e["event"] == "succeeded")


def test_jobs_sent_to_a_host_run_there_and_elsewhere_once_it_is_gone(
    url: str, store: Store, processes: Processes, app_path: Callable[[str], str]
) -> None:
    common = ("--url", url, "--host-grace", f"{GRACE:g}", "--log-level", "WARNING")
    processes.rota("worker", app_path("loaded"), "--queues", "default", "--host", "web-a", *common)
    web_b = processes.rota(
        "worker", app_path("loaded"), "--queues", "default", "--host", "web-b", *common
    )
    wait_for(
        lambda: {w.host for w in store.workers()} == {"web-a", "web-b"},
        timeout=30,
        what="both workers' heartbeats",
    )
    sender = App(url)
    short = sender.task(name="short")(lambda: None)
    try:
        to_b = [short.options(host="web-b").send().id for _ in range(20)]
        anywhere = [short.send().id for _ in range(20)]
        sent = subprocess.run(
            [ROTA, "send", app_path("loaded"), "short", "--host", "web-a", "--url", url],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        to_a = sent.stdout.strip()
        everything = [*to_b, *anywhere, to_a]
        wait_for(
            lambda: all(ran_on(store, job_id) for job_id in everything),
            timeout=30,
            what="every job to run",
        )
        assert {ran_on(store, job_id) for job_id in to_b} == {"web-b"}
        assert ran_on(store, to_a) == "web-a"
        assert store.get_job(to_a).host == "web-a"  # type: ignore[union-attr]

        web_b.send_signal(signal.SIGTERM)
        assert web_b.wait(timeout=60) == 0
        left = short.options(host="web-b").send().id
        wait_for(lambda: ran_on(store, left) is not None, timeout=GRACE + 30, what="the takeover")
        job = store.get_job(left)
        assert job is not None and job.started_at is not None
        assert ran_on(store, left) == "web-a"
        # web-b's last heartbeat was no later than its stop: the job waited
        # out the grace from there, not from its send
        assert job.started_at - job.enqueued_at < GRACE + 6.0
    finally:
        sender.close()


def test_rota_run_serves_the_host_name_of_its_worker_host_option(
    url: str, store: Store, processes: Processes, app_path: Callable[[str], str]
) -> None:
    processes.rota(
        "run", app_path("loaded"), "--url", url, "--no-web", "--worker-host", "web-c", "-q"
    )
    sender = App(url)
    short = sender.task(name="short")(lambda: None)
    try:
        job_id = short.options(host="web-c").send().id
        wait_for(lambda: ran_on(store, job_id) == "web-c", timeout=30, what="the job on web-c")
    finally:
        sender.close()
