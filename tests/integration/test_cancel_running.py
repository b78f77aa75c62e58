"""Cancelling running jobs of real ``rota worker`` processes, in every mode,
on every store: each ends cancelled within seconds and the worker serves on.
In threads mode a timeout stops a task through the same signal."""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from helpers import wait_for, written
from procs import Processes, alive, pids_in, tree_started
from rota import App, JobCancelled, JobFailed
from rota.models import JobState
from rota.task import JobHandle

LONG = 60.0
#: The keeper extends leases at most every second: a cancel reaches the job
#: within that, and the job ends a moment later.
PROMPT = 5.0

StartWorker = Callable[..., subprocess.Popen[bytes]]


@pytest.fixture
def sender(sender_of: Callable[[str, str], App], url: str) -> App:
    """The cancelling app, sending to the test's store."""
    return sender_of("cancelling", url)


@pytest.fixture
def worker(url: str, processes: Processes, app_path: Callable[[str], str]) -> StartWorker:
    """Start a real ``rota worker`` on the cancelling app (stopped at teardown)."""

    def start(*extra: str) -> subprocess.Popen[bytes]:
        return processes.rota("worker", app_path("cancelling"), "--url", url, *extra)

    return start


def cancel_while_running(handle: JobHandle[Any], cancel: Callable[[], object]) -> float:
    """Wait until ``handle``'s job runs, cancel it; seconds until it ended cancelled."""
    wait_for(lambda: handle.status() == "running", timeout=30, what="the job to start")
    asked = time.monotonic()
    assert cancel()
    wait_for(lambda: handle.status() == "cancelled", timeout=PROMPT * 2, what="the cancel")
    took = time.monotonic() - asked
    with pytest.raises(JobCancelled):
        handle.result(timeout=1)
    return took


def last_entry(handle: JobHandle[Any]) -> dict[str, Any]:
    return dict(handle.job().history[-1])


def test_threads_mode_stops_a_task_at_its_check_point(sender: App, worker: StartWorker) -> None:
    worker("--concurrency", "2")
    handle = sender.tasks["cooperative"].send(LONG)
    took = cancel_while_running(handle, lambda: sender.admin.cancel_job(handle.id))
    assert took < PROMPT
    entry = last_entry(handle)
    assert entry["event"] == "cancelled" and entry["by"] == "python"
    assert entry["attempt"] == 1
    assert handle.job().attempt == 1  # not retried
    assert isinstance(sender.tasks["pid"].send().result(timeout=30), int)


def test_threads_mode_runs_on_cancel_callbacks_and_sets_cancelled(
    sender: App, worker: StartWorker, tmp_path: Path
) -> None:
    worker("--concurrency", "1")
    marker = tmp_path / "cancelled"
    handle = sender.tasks["polite"].send(str(marker), LONG)
    assert cancel_while_running(handle, handle.cancel) < PROMPT
    assert marker.read_text() == handle.id
    assert last_entry(handle)["by"] == "python", "a handle cancels as a Python caller of app.admin"
    assert isinstance(sender.tasks["pid"].send().result(timeout=30), int)


def test_threads_mode_logs_a_cancelled_job_as_cancelled(
    sender: App, worker: StartWorker, processes: Processes, tmp_path: Path
) -> None:
    """The task saw ``cancelled`` and returned normally: the store ends the
    job cancelled, and the worker's line says so."""
    proc = worker("--concurrency", "1")
    handle = sender.tasks["polite"].send(str(tmp_path / "cancelled"), LONG)
    assert cancel_while_running(handle, handle.cancel) < PROMPT
    line = rf"INFO rota\.worker: polite {handle.id} attempt 1 cancelled in [\d.]+ ms\n"
    wait_for(lambda: re.search(line, processes.output(proc)), timeout=PROMPT, what="the line")
    assert f"{handle.id} attempt 1 succeeded" not in processes.output(proc)


def test_threads_mode_tells_a_task_over_its_timeout_to_stop(
    sender: App, worker: StartWorker, tmp_path: Path
) -> None:
    """Its attempt fails on the timeout, and the task reads ``cancelled`` and
    has its ``on_cancel`` callbacks run, as for a cancel."""
    worker("--concurrency", "1")
    marker = tmp_path / "cancelled"
    handle = sender.tasks["polite_timed"].send(str(marker), LONG)
    with pytest.raises(JobFailed, match=r"JobTimeout: timed out after 1 s"):
        handle.result(timeout=30)
    assert written(marker, timeout=PROMPT, what="the on_cancel callback") == handle.id
    ended = Path(f"{marker}.end")
    assert written(ended, timeout=PROMPT, what="the task to stop") == "stopped"
    job = handle.job()
    assert job.state is JobState.FAILED and last_entry(handle)["event"] == "failed"


def test_threads_mode_cancels_an_async_task(
    sender: App, worker: StartWorker, tmp_path: Path
) -> None:
    worker("--concurrency", "2")
    marker = tmp_path / "cancelled"
    handle = sender.tasks["anoting"].send(str(marker), LONG)
    assert cancel_while_running(handle, handle.cancel) < PROMPT
    assert marker.read_text() == "CancelledError"
    assert last_entry(handle)["event"] == "cancelled"
    assert sender.tasks["asleep"].send(0.01).result(timeout=30) == "woke"


def test_threads_mode_cancels_an_async_task_at_its_timeout(
    sender: App, worker: StartWorker, tmp_path: Path
) -> None:
    worker("--concurrency", "1")
    marker = tmp_path / "cancelled"
    handle = sender.tasks["anoting_timed"].send(str(marker), LONG)
    with pytest.raises(JobFailed, match=r"JobTimeout: timed out after 1 s"):
        handle.result(timeout=30)
    assert written(marker, timeout=PROMPT, what="the CancelledError") == "CancelledError"
    assert handle.job().state is JobState.FAILED


def test_async_mode_cancels_the_coroutine(sender: App, worker: StartWorker) -> None:
    worker("--mode", "async", "--concurrency", "4")
    handle = sender.tasks["asleep"].send(LONG)
    assert cancel_while_running(handle, handle.cancel) < PROMPT
    assert last_entry(handle)["event"] == "cancelled"
    assert sender.tasks["asleep"].send(0.01).result(timeout=30) == "woke"


def test_processes_mode_kills_the_child_and_replaces_it(sender: App, worker: StartWorker) -> None:
    worker("--mode", "processes", "--concurrency", "1")
    before = sender.tasks["pid"].send().result(timeout=30)
    handle = sender.tasks["sleeper"].send(LONG)
    assert cancel_while_running(handle, handle.cancel) < PROMPT
    assert last_entry(handle)["event"] == "cancelled"
    after = sender.tasks["pid"].send().result(timeout=30)
    assert after != before, "the child that ran the cancelled job was replaced"


@pytest.mark.parametrize("mode", ["threads", "processes", "async"])
def test_a_job_cancelled_while_it_waits_for_a_slot_ends_cancelled_unrun(
    sender: App, worker: StartWorker, tmp_path: Path, mode: str
) -> None:
    """A job the worker holds for a slot (claimed ahead) and cancelled before
    a slot frees never runs: it ends cancelled as a slot takes it up."""
    # a short lease: a held job's lease (and with it the cancel) is renewed
    # once a third of it has passed
    marking = sender.tasks["marking"].options(lease=3)
    markers = [tmp_path / "first", tmp_path / "second"]
    handles = [marking.send(str(marker), 6.0) for marker in markers]
    worker("--mode", mode, "--concurrency", "1", "--prefetch", "1")  # claims both at once
    wait_for(lambda: any(m.exists() for m in markers), timeout=30, what="a job to start")
    ran = 0 if markers[0].exists() else 1
    busy, held = handles[ran], handles[1 - ran]
    assert held.status() == "running", "the other job is held for the slot"
    assert held.cancel()
    assert busy.result(timeout=30) == "woke"
    wait_for(lambda: held.status() == "cancelled", timeout=PROMPT * 2, what="the cancel")
    assert not markers[1 - ran].exists(), "the cancelled job ran"
    assert last_entry(held)["event"] == "cancelled"


@pytest.mark.parametrize("mode", ["threads", "processes"])
def test_a_cancelled_command_has_its_whole_process_group_killed(
    url: str,
    processes: Processes,
    app_path: Callable[[str], str],
    tree_pids: Path,
    commands_sender: App,
    mode: str,
) -> None:
    processes.rota("worker", app_path("commands"), "--url", url, "--mode", mode)
    handle = commands_sender.tasks["long_tree"].send(extra_args=[str(tree_pids)])
    wait_for(lambda: tree_started(tree_pids), timeout=30, what="the command's tree to start")
    # then SIGTERM, its grace, SIGKILL, and (processes mode) the child's report
    assert cancel_while_running(handle, handle.cancel) < PROMPT + 2.0
    assert not any(map(alive, pids_in(tree_pids))), "no process of the command is left"
    assert last_entry(handle)["event"] == "cancelled"
