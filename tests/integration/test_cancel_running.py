"""Cancelling running jobs of real ``rota worker`` processes, in every mode,
on every store: each ends cancelled within seconds and the worker serves on."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from helpers import wait_for
from procs import Processes, alive, pids_in, tree_started
from rota import App, JobCancelled
from rota.task import JobHandle

LONG = 60.0
#: The keeper extends leases at most every second: a cancel reaches the job
#: within that, and the job ends a moment later.
PROMPT = 5.0


@pytest.fixture
def sender(sender_of: Callable[[str, str], App], url: str) -> App:
    """The cancelling app, sending to the test's store."""
    return sender_of("cancelling", url)


@pytest.fixture
def worker(url: str, processes: Processes, app_path: Callable[[str], str]) -> Callable[..., None]:
    """Start a real ``rota worker`` on the cancelling app (stopped at teardown)."""

    def start(*extra: str) -> None:
        processes.rota("worker", app_path("cancelling"), "--url", url, *extra)

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


def test_threads_mode_stops_a_task_at_its_check_point(
    sender: App, worker: Callable[..., None]
) -> None:
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
    sender: App, worker: Callable[..., None], tmp_path: Path
) -> None:
    worker("--concurrency", "1")
    marker = tmp_path / "cancelled"
    handle = sender.tasks["polite"].send(str(marker), LONG)
    assert cancel_while_running(handle, handle.cancel) < PROMPT
    assert marker.read_text() == handle.id
    assert last_entry(handle)["by"] == "python", "a handle cancels as a Python caller of app.admin"
    assert isinstance(sender.tasks["pid"].send().result(timeout=30), int)


def test_async_mode_cancels_the_coroutine(sender: App, worker: Callable[..., None]) -> None:
    worker("--mode", "async", "--concurrency", "4")
    handle = sender.tasks["asleep"].send(LONG)
    assert cancel_while_running(handle, handle.cancel) < PROMPT
    assert last_entry(handle)["event"] == "cancelled"
    assert sender.tasks["asleep"].send(0.01).result(timeout=30) == "woke"


def test_processes_mode_kills_the_child_and_replaces_it(
    sender: App, worker: Callable[..., None]
) -> None:
    worker("--mode", "processes", "--concurrency", "1")
    before = sender.tasks["pid"].send().result(timeout=30)
    handle = sender.tasks["sleeper"].send(LONG)
    assert cancel_while_running(handle, handle.cancel) < PROMPT
    assert last_entry(handle)["event"] == "cancelled"
    after = sender.tasks["pid"].send().result(timeout=30)
    assert after != before, "the child that ran the cancelled job was replaced"


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
    assert cancel_while_running(handle, handle.cancel) < PROMPT + 1.0  # SIGTERM, grace, SIGKILL
    assert not any(map(alive, pids_in(tree_pids))), "no process of the command is left"
    assert last_entry(handle)["event"] == "cancelled"
