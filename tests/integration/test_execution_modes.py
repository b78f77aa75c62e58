"""Execution modes of real ``rota worker`` processes: timeouts, retries, crashes, signals."""

from __future__ import annotations

import os
import signal
import subprocess
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from helpers import wait_for
from procs import ROTA, Processes
from rota import App, JobFailed
from rota.models import JobState
from rota.stores import Store

HANG_LONG = 30.0


@pytest.fixture
def sender(sender_of: Callable[[str, str], App], url: str) -> App:
    """The modes app, sending to the test's store."""
    return sender_of("modes", url)


def counts(store: Store) -> dict[JobState, int]:
    """How many jobs of the default queue are in each state."""
    return {q.name: q.counts for q in store.queues()}.get("default", {})


def start_worker(
    processes: Processes, app_path: Callable[[str], str], url: str, *extra: str
) -> subprocess.Popen[bytes]:
    """A real ``rota worker`` on the modes app."""
    return processes.rota("worker", app_path("modes"), "--url", url, *extra)


def test_processes_mode_kills_a_job_over_its_timeout_and_replaces_the_child(
    url: str, sender: App, processes: Processes, app_path: Callable[[str], str]
) -> None:
    start_worker(processes, app_path, url, "--mode", "processes", "--concurrency", "1")
    before = sender.tasks["pid"].send().result(timeout=30)
    hung = sender.tasks["hang"].send(HANG_LONG)
    killed = r"JobTimeout: timed out after 0\.5 s; child process killed"
    with pytest.raises(JobFailed, match=killed):
        hung.result(timeout=20)
    after = sender.tasks["pid"].send().result(timeout=30)
    assert after != before, "the child that ran the hung job was replaced"
    assert sender.tasks["hang"].send(0.01).result(timeout=20) == "woke"


def test_processes_mode_survives_a_child_that_dies(
    url: str, sender: App, processes: Processes, app_path: Callable[[str], str]
) -> None:
    start_worker(processes, app_path, url, "--mode", "processes", "--concurrency", "1")
    with pytest.raises(JobFailed, match="child process running the job died"):
        sender.tasks["crash"].send().result(timeout=30)
    assert isinstance(sender.tasks["pid"].send().result(timeout=30), int)


@pytest.mark.parametrize("mode", ["threads", "processes", "async"])
def test_a_task_that_raises_system_exit_or_keyboard_interrupt_fails_as_its_own_error(
    mode: str, url: str, sender: App, processes: Processes, app_path: Callable[[str], str]
) -> None:
    """User code, not a crash of the worker: the job fails with the exception
    and its traceback, no internal error is logged, and the same slot (the
    same child process) runs the next job."""
    worker = start_worker(processes, app_path, url, "--mode", mode, "--concurrency", "1")
    before = sender.tasks["pid"].send().result(timeout=30)
    exits = sender.tasks["aexits" if mode == "async" else "exits"]
    calls = [(exits, (3,), "SystemExit: 3", "raise SystemExit(code)")]
    calls.append((sender.tasks["interrupted"], (), "KeyboardInterrupt: from the task", "raise"))
    for task, args, error, line in calls:
        handle = task.send(*args)
        with pytest.raises(JobFailed):
            handle.result(timeout=30)
        job = handle.job()
        assert job.error == error
        assert job.traceback is not None and f"    {line}" in job.traceback
    assert sender.tasks["pid"].send().result(timeout=30) == before
    assert "internal error" not in processes.output(worker)


def test_async_mode_cancels_a_coroutine_at_its_timeout(
    url: str, sender: App, processes: Processes, app_path: Callable[[str], str]
) -> None:
    start_worker(processes, app_path, url, "--mode", "async", "--concurrency", "4")
    assert sender.tasks["ahang"].send(0.01).result(timeout=30) == "woke"
    with pytest.raises(JobFailed, match=r"JobTimeout: timed out after 0\.5 s; cancelled"):
        sender.tasks["ahang"].send(HANG_LONG).result(timeout=20)


@pytest.mark.parametrize("mode", ["threads", "processes", "async"])
def test_a_held_jobs_timeout_counts_from_its_start_not_its_claim(
    mode: str, url: str, sender: App, processes: Processes, app_path: Callable[[str], str]
) -> None:
    """Four jobs of 0.4 s with a timeout of 0.5 s, claimed together by one
    slot: the last starts 1.2 s after its claim, and still succeeds (the
    worker looks for late jobs at least once a second)."""
    task = "ahang" if mode == "async" else "hang"
    extra = ("--mode", mode, "--concurrency", "1", "--prefetch", "3")
    handles = sender.tasks[task].send_many([(0.4,)] * 4)
    start_worker(processes, app_path, url, *extra)
    assert [h.result(timeout=30) for h in handles] == ["woke"] * 4
    assert [j.attempt for h in handles if (j := h.job())] == [1] * 4


def test_threads_mode_reports_a_timeout_at_the_deadline(
    url: str, sender: App, processes: Processes, app_path: Callable[[str], str]
) -> None:
    start_worker(processes, app_path, url, "--concurrency", "2")
    handle = sender.tasks["hang"].send(3.0)
    with pytest.raises(JobFailed, match=r"JobTimeout: timed out after 0\.5 s"):
        handle.result(timeout=20)
    job = handle.job()
    assert job.started_at is not None and job.finished_at is not None
    assert job.finished_at - job.started_at < 0.9, "reported when its timeout fell due"


@pytest.mark.parametrize("mode", ["threads", "processes", "async"])
def test_retries_with_backoff_then_success_or_dead_letter(
    mode: str, url: str, sender: App, processes: Processes, app_path: Callable[[str], str]
) -> None:
    start_worker(processes, app_path, url, "--mode", mode, "--concurrency", "2")
    assert sender.tasks["flaky"].send(2).result(timeout=30) == 3
    doomed = sender.tasks["flaky"].send(5)
    with pytest.raises(JobFailed, match="attempt 3 fails on purpose"):
        doomed.result(timeout=30)
    job = doomed.job()
    assert job.state is JobState.FAILED and job.attempt == 3
    assert [h["event"] for h in job.history] == ["failed", "failed", "failed"]
    assert "Traceback" in (job.traceback or "")


@pytest.mark.parametrize("mode", ["threads", "processes", "async"])
def test_a_snoozing_job_runs_again_without_using_a_retry(
    mode: str,
    url: str,
    sender: App,
    processes: Processes,
    app_path: Callable[[str], str],
    tmp_path: Path,
) -> None:
    start_worker(processes, app_path, url, "--mode", mode, "--concurrency", "2")
    task = sender.tasks["asnoozy" if mode == "async" else "snoozy"]
    handle = task.send(str(tmp_path / "runs"), 3)
    assert handle.result(timeout=30) == [1, 1, 1]
    job = handle.job()
    assert (job.state, job.attempt, job.max_attempts) == (JobState.SUCCEEDED, 1, 1)
    assert [h["event"] for h in job.history] == ["succeeded"]


def test_a_job_of_a_task_the_worker_lacks_waits_for_a_worker_that_has_it(
    url: str, processes: Processes, app_path: Callable[[str], str], tmp_path: Path
) -> None:
    """A rolling deploy: a worker of the older code claims a job of a task
    only the newer code has; the job waits, its attempt not counted, and the
    worker of the newer code runs it."""
    newer = App(url)
    record = newer.task(name="record")(lambda i, pause=0.0: i)  # as apps/counting.py has it
    older = start_worker(processes, app_path, url)  # the modes app: no task "record"
    handle = record.send(7)
    wait_for(
        lambda: (handle.job().error or "").endswith("(waiting for a worker that has it)"),
        timeout=30,
        what="the job to wait for a worker that has its task",
    )
    job = handle.job()
    assert (job.state, job.attempt, len(job.history)) == (JobState.SCHEDULED, 0, 0)
    assert "unknown task 'record'" in (job.error or "")
    older.send_signal(signal.SIGTERM)
    assert older.wait(30) == 0
    assert "task 'record' is not registered in this worker" in processes.output(older)
    env = {"ROTA_TEST_LOG": str(tmp_path / "executions")}
    processes.rota("worker", app_path("counting"), "--url", url, env=env)
    assert handle.result(timeout=30) == 7
    assert [h["event"] for h in handle.job().history] == ["succeeded"]
    newer.close()


def test_a_second_signal_exits_at_once_and_the_lease_brings_the_job_back(
    url: str, sender: App, processes: Processes, app_path: Callable[[str], str]
) -> None:
    worker = start_worker(processes, app_path, url, "--grace", "60")
    job = sender.tasks["hang"].options(timeout=None, lease=1).send(HANG_LONG)
    wait_for(lambda: job.status() == "running", timeout=30, what="the job to start")
    os.kill(worker.pid, signal.SIGTERM)
    wait_for(lambda: "finishing running jobs" in processes.output(worker), timeout=10)
    os.kill(worker.pid, signal.SIGINT)  # (a SIGTERM again this soon is the same request)
    assert worker.wait(10) == 1
    start_worker(processes, app_path, url)
    wait_for(lambda: job.job().lost == 1, timeout=30, what="the lost attempt to be recovered")
    assert job.job().history[0]["event"] == "lost"


def test_a_hang_up_drains_the_worker_unless_it_runs_under_nohup(
    url: str, sender: App, processes: Processes, app_path: Callable[[str], str]
) -> None:
    """SIGHUP (its terminal closed) is a stop request, as SIGTERM: the running
    job is released, not left to its lease; under ``nohup`` it is ignored."""
    worker = start_worker(processes, app_path, url, "--grace", "0.2")
    job = sender.tasks["hang"].options(timeout=None).send(HANG_LONG)
    wait_for(lambda: job.status() == "running", timeout=30, what="the job to start")
    os.kill(worker.pid, signal.SIGHUP)
    assert worker.wait(20) == 0
    assert "signal 1: finishing running jobs" in processes.output(worker)
    assert (job.status(), job.job().lost) == ("queued", 0)  # released, no attempt lost
    ignoring = processes.command(
        "nohup", ROTA, "worker", app_path("modes"), "--url", url, "--queues", "nothing"
    )
    wait_for(lambda: "started" in processes.output(ignoring), timeout=30, what="the start")
    os.kill(ignoring.pid, signal.SIGHUP)
    with pytest.raises(subprocess.TimeoutExpired):
        ignoring.wait(1.0)  # (an event that must not come: a bounded wait for it)


def test_processes_mode_children_run_the_worker_hooks(
    url: str, processes: Processes, app_path: Callable[[str], str], tmp_path: Path
) -> None:
    log = tmp_path / "hooks.log"
    app = App(url)
    app.task(name="work")(lambda n: n)
    app.tasks["work"].send_many([(n,) for n in range(6)])
    worker = processes.rota(
        "worker", app_path("hooked"), "--url", url, "--mode", "processes", "--concurrency", "2",
        env={"ROTA_TEST_LOG": str(log)},
    )  # fmt: skip

    def lines() -> list[tuple[str, int]]:
        text = log.read_text() if log.exists() else ""
        return [(event, int(pid)) for event, pid in (line.split() for line in text.splitlines())]

    wait_for(lambda: sum(e == "job" for e, _ in lines()) == 6, timeout=60, what="the jobs to run")
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(30) == 0
    app.close()
    seen = lines()
    runners = {pid for event, pid in seen if event == "job"}
    assert worker.pid not in runners, "the jobs ran in child processes"
    for pid in runners | {worker.pid}:
        events = [event for event, p in seen if p == pid]
        assert events[0] == "start" and events.count("start") == 1, (pid, events)
        assert events[-1] == "stop" and events.count("stop") == 1, (pid, events)


def test_processes_mode_holds_prefetched_jobs_and_releases_them_at_shutdown(
    url: str,
    sender: App,
    store: Store,
    processes: Processes,
    app_path: Callable[[str], str],
    tmp_path: Path,
) -> None:
    gate = tmp_path / "gate"
    handles = sender.tasks["gated"].send_many([{"path": str(gate)}] * 5)
    worker = start_worker(
        processes,
        app_path,
        url,
        *("--mode", "processes", "--concurrency", "1", "--prefetch", "1", "--grace", "30"),
    )

    # one job in the child and one waiting for it; the rest stay queued
    wait_for(lambda: counts(store).get(JobState.RUNNING) == 2, timeout=30, what="two jobs held")
    wait_for(Path(f"{gate}.started").exists, timeout=30, what="the child to start its job")
    assert counts(store).get(JobState.QUEUED) == 3
    os.killpg(worker.pid, signal.SIGTERM)  # as Ctrl-C does, to the child too
    # the waiting job goes back at once; the running one finishes within the grace
    wait_for(
        lambda: counts(store).get(JobState.QUEUED) == 4, timeout=10, what="the prefetched job back"
    )
    assert counts(store).get(JobState.RUNNING) == 1
    gate.touch()
    assert worker.wait(30) == 0
    jobs = [store.get_job(h.id) for h in handles]
    assert Counter(j.state for j in jobs if j) == {JobState.SUCCEEDED: 1, JobState.QUEUED: 4}
    assert all(j.attempt == 0 for j in jobs if j and j.state is JobState.QUEUED)


@pytest.mark.parametrize("mode", ["threads", "processes"])
def test_a_worker_of_long_jobs_holds_none_beyond_its_slots(
    mode: str,
    url: str,
    sender: App,
    store: Store,
    processes: Processes,
    app_path: Callable[[str], str],
    tmp_path: Path,
) -> None:
    """By default a worker holds jobs beyond its slots only while its jobs
    are short (rota.worker.ahead): with long ones, the rest wait in the
    queue for whichever worker frees a slot first."""
    start_worker(processes, app_path, url, "--mode", mode, "--concurrency", "1")

    def gated_batch(gate: Path) -> None:
        sender.tasks["gated"].send_many([{"path": str(gate)}] * 3)
        wait_for(Path(f"{gate}.started").exists, timeout=30, what=f"the {gate.name} gated job")
        assert counts(store).get(JobState.RUNNING) == 1 and counts(store).get(JobState.QUEUED) == 2
        gate.touch()

    gated_batch(tmp_path / "first")  # before any job ended
    for handle in sender.tasks["hang"].send_many([(0.2,)] * 3):
        assert handle.result(timeout=30) == "woke"
    gated_batch(tmp_path / "second")  # after long ones
    wait_for(lambda: counts(store).get(JobState.SUCCEEDED) == 9, timeout=30, what="every job")
