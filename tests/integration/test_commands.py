"""Commands as jobs under real ``rota worker`` and ``rota scheduler`` processes.

A command's whole process tree (children, grandchildren, a grandchild that
ignores SIGTERM) is gone after its timeout and after its worker is stopped.
"""

from __future__ import annotations

import contextlib
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from helpers import APPS, wait_for
from procs import TREE_SIZE, Processes, alive, pids_in, tree_started
from rota import App, JobFailed
from rota.models import JobState
from rota.stores import open_store


def _worker(processes: Processes, url: str, *flags: str) -> subprocess.Popen[bytes]:
    return processes.rota("worker", f"{APPS / 'commands.py'}:app", "--url", url, *flags)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 0


#: Worker flags of the modes commands run in, as a job of a thread or of a child process.
MODES = [pytest.param((), id="threads"), pytest.param(("--mode", "processes"), id="processes")]


@pytest.mark.parametrize("mode", MODES)
def test_a_timeout_kills_the_whole_tree(
    commands_sender: App, processes: Processes, url: str, tree_pids: Path, mode: tuple[str, ...]
) -> None:
    worker = _worker(processes, url, *mode)
    handle = commands_sender.tasks["tree"].send(extra_args=[str(tree_pids)])
    with pytest.raises(JobFailed) as failed:
        handle.result(timeout=30)
    assert "was killed by SIGTERM after timeout 1 s" in str(failed.value)
    assert len(pids_in(tree_pids)) == TREE_SIZE
    wait_for(lambda: not any(alive(p) for p in pids_in(tree_pids)), timeout=10, what="no pid left")
    _stop(worker)


@pytest.mark.parametrize("mode", MODES)
def test_a_stopped_worker_kills_the_tree_and_releases_the_job(
    commands_sender: App, processes: Processes, url: str, tree_pids: Path, mode: tuple[str, ...]
) -> None:
    worker = _worker(processes, url, "--grace", "0.5", *mode)
    handle = commands_sender.tasks["long_tree"].send(extra_args=[str(tree_pids)])
    wait_for(lambda: tree_started(tree_pids), timeout=30, what="the tree to start")
    _stop(worker)
    assert not any(alive(p) for p in pids_in(tree_pids))  # gone before the worker exited
    job = handle.job()
    assert (job.state, job.attempt) == (JobState.QUEUED, 0)


@pytest.mark.parametrize("flags", [*MODES, pytest.param(("--processes", "2"), id="pool")])
def test_a_worker_killed_with_sigkill_leaves_no_process_of_its_commands(
    commands_sender: App, processes: Processes, url: str, tree_pids: Path, flags: tuple[str, ...]
) -> None:
    worker = _worker(processes, url, *flags)
    commands_sender.tasks["long_tree"].send(extra_args=[str(tree_pids)])
    wait_for(lambda: tree_started(tree_pids), timeout=30, what="the tree to start")
    worker.kill()  # (a pool's supervisor: its children die with it)
    worker.wait(timeout=10)
    # SIGTERM at once, SIGKILL the command's grace (0.5 s) later
    wait_for(lambda: not any(alive(p) for p in pids_in(tree_pids)), timeout=10, what="no pid")


@pytest.mark.parametrize("mode", MODES)
def test_a_command_deaf_to_sigterm_is_killed_within_half_its_lease_when_its_worker_dies(
    commands_sender: App, processes: Processes, url: str, tree_pids: Path, mode: tuple[str, ...]
) -> None:
    """Its grace (120 s) is far longer than its lease (6 s): once its worker
    is killed with SIGKILL, its guard gives it half the lease, then SIGKILL,
    so that no process of it runs on beside the attempt another worker
    starts once the lease has run out (its concurrency slot with it)."""
    first = _worker(processes, url, *mode)
    handle = commands_sender.tasks["leased_deaf"].send(extra_args=[str(tree_pids)])
    attempt = wait_for(lambda: pids_in(tree_pids), timeout=30, what="the command to start")
    assert len(attempt) == 3 and all(map(alive, attempt))  # guard, shell, sleep
    expires = handle.job().lease_expires  # by the store's clock; renewals only move it on
    assert expires is not None
    first.kill()
    killed = time.monotonic()
    first.wait(timeout=10)
    wait_for(lambda: not any(map(alive, attempt)), timeout=30, what="the first attempt to end")
    assert time.time() < expires, "the first attempt outlived its lease"
    assert time.monotonic() - killed >= 3.0 - 0.1  # SIGTERM, and half the lease to close
    _worker(processes, url, *mode)
    retried = wait_for(lambda: pids_in(tree_pids)[3:], timeout=60, what="the second attempt")
    assert all(map(alive, retried)) and not any(map(alive, attempt))
    job = handle.job()
    assert (job.state, job.lost) == (JobState.RUNNING, 1)


@pytest.mark.parametrize("mode", MODES)
def test_the_guard_of_a_killed_worker_ends_as_soon_as_its_command_is_gone(
    commands_sender: App, processes: Processes, url: str, tree_pids: Path, mode: tuple[str, ...]
) -> None:
    """A command that ends on SIGTERM takes its guard with it at once: the
    guard, whose command line names the command, does not wait out the
    grace (120 s) nor half the lease (3 s) before it ends."""
    worker = _worker(processes, url, *mode)
    commands_sender.tasks["leased_obedient"].send(extra_args=[str(tree_pids)])
    attempt = wait_for(lambda: pids_in(tree_pids), timeout=30, what="the command to start")
    assert len(attempt) == 3 and all(map(alive, attempt))  # guard, shell, sleep
    worker.kill()
    killed = time.monotonic()
    worker.wait(timeout=10)
    wait_for(lambda: not any(map(alive, attempt)), timeout=30, what="the guard to end")
    assert time.monotonic() - killed < 2.0


@pytest.fixture
def lingering_pids(tmp_path: Path) -> Iterator[Path]:
    """The file a task's lingering fork writes its pid to; killed at teardown."""
    path = tmp_path / "lingering"
    yield path
    for pid in pids_in(path):
        with contextlib.suppress(psutil.Error):
            psutil.Process(pid).kill()


def test_a_fork_of_a_task_does_not_keep_a_command_alive_past_its_worker(
    commands_sender: App, processes: Processes, url: str, tree_pids: Path, lingering_pids: Path
) -> None:
    """A process a task forks while a command runs in another slot gets a
    copy of the worker's open files: not of the pipe whose closing tells
    the command's guard that the worker died."""
    worker = _worker(processes, url, "--concurrency", "2")
    commands_sender.tasks["long_tree"].send(extra_args=[str(tree_pids)])
    wait_for(lambda: tree_started(tree_pids), timeout=30, what="the tree to start")
    commands_sender.tasks["fork_and_linger"].send(str(lingering_pids)).result(timeout=30)
    wait_for(lingering_pids.exists, timeout=10, what="the fork's pid")
    worker.kill()
    worker.wait(timeout=10)
    wait_for(lambda: not any(alive(p) for p in pids_in(tree_pids)), timeout=10, what="no pid")
    assert all(alive(p) for p in pids_in(lingering_pids))  # the fork lives on, as it may


def test_ok_codes_decide_success_and_a_failure_names_code_and_stderr(
    commands_sender: App, processes: Processes, url: str
) -> None:
    worker = _worker(processes, url)
    ok = commands_sender.tasks["exits"].send(extra_args=["3"])
    bad = commands_sender.tasks["exits"].send(extra_args=["4"])
    result: dict[str, Any] = ok.result(timeout=30)
    assert result["exit_code"] == 3
    assert (result["stdout"], result["stderr"]) == ("out\n", "err 3\n")
    assert result["truncated"] == {"stdout": False, "stderr": False}
    assert 0 < result["duration"] < 30
    with pytest.raises(JobFailed, match="exited with code 4: err 4\nlast lines of stderr:\nerr 4"):
        bad.result(timeout=30)
    _stop(worker)


def test_a_failing_command_is_retried_with_backoff(
    commands_sender: App, processes: Processes, url: str, tmp_path: Path
) -> None:
    worker = _worker(processes, url)
    runs = tmp_path / "runs"
    handle = commands_sender.tasks["flaky"].send(extra_args=[str(runs)])
    with pytest.raises(
        JobFailed, match="exited with code 1: x\nlast lines of stderr:\nfailing, run x\nx"
    ):
        handle.result(timeout=30)
    job = handle.job()
    assert (job.attempt, job.max_attempts) == (3, 3)
    assert runs.read_text() == "x\nx\nx\n"
    assert len(job.history) == 3
    _stop(worker)


def test_the_output_keeps_its_tail(commands_sender: App, processes: Processes, url: str) -> None:
    worker = _worker(processes, url)
    result = commands_sender.tasks["chatty"].send().result(timeout=30)
    assert result["stdout"] == "aaaaaaaaaaaaEND\n"
    assert result["truncated"] == {"stdout": True, "stderr": False}
    _stop(worker)


def test_rota_send_cmd_runs_under_a_worker(
    processes: Processes, url: str, tmp_path: Path, commands_sender: App
) -> None:
    worker = _worker(processes, url)
    target = tmp_path / "made"
    sent = processes.rota(
        "send",
        f"{APPS / 'commands.py'}:app",
        "--url",
        url,
        "--wait",
        "--cmd",
        "--",
        sys.executable,
        "-c",
        f"open({str(target)!r}, 'w').write('yes'); print('done')",
    )
    assert sent.wait(timeout=60) == 0, processes.output(sent)
    assert target.read_text() == "yes"
    assert '"exit_code": 0' in processes.output(sent)
    assert '"stdout": "done\\n"' in processes.output(sent)
    _stop(worker)


def test_a_command_schedule_fires_under_rota_scheduler(
    processes: Processes, url: str, tmp_path: Path, commands_sender: App
) -> None:
    target = tmp_path / "ticks"
    added = processes.rota(
        "schedules",
        "add",
        "tick",
        "--url",
        url,
        "--every",
        "1",
        "--",
        "sh",
        "-c",
        'echo tick >> "$0"',
        str(target),
    )
    assert added.wait(timeout=30) == 0, processes.output(added)
    assert "every second" in processes.output(added)
    listed = processes.rota("schedules", "list", "--url", url)
    assert listed.wait(timeout=30) == 0
    assert "rota.cmd: sh -c 'echo tick >> \"$0\"'" in processes.output(listed)
    # No Python file at all: the scheduler fires what is stored, the worker runs command lines.
    scheduler = processes.rota("scheduler", "--url", url)
    worker = processes.rota("worker", "--commands", "--url", url)
    wait_for(lambda: target.exists() and target.read_text().count("tick") >= 2, timeout=30)
    # and a one-off command line, sent without an app either
    sent = processes.rota("send", "--url", url, "--wait", "--cmd", "--", "echo", "one-off")
    assert sent.wait(timeout=60) == 0, processes.output(sent)
    assert '"stdout": "one-off\\n"' in processes.output(sent)
    _stop(worker)
    _stop(scheduler)
    # the worker's lines name the schedule: the task's name, rota.cmd, would not say which
    lines = re.findall(
        r"rota\.cmd [0-9a-f]{32} \(schedule tick\) attempt 1 succeeded in", processes.output(worker)
    )
    assert len(lines) >= 2, processes.output(worker)


def test_rota_run_with_commands_retries_a_failed_command_schedule(
    processes: Processes, url: str, tmp_path: Path
) -> None:
    source = tmp_path / "plainapp.py"
    source.write_text("from rota import App\n\napp = App()\n")  # commands not enabled
    target = tmp_path / "ticks"
    # Fired by hand (run-now): its first run fails, its retry succeeds.
    added = processes.rota(
        "schedules", "add", "tick", "--url", url, "--at", "2099-01-01T00:00", "--retries", "2",
        "--backoff", "0.1s,0.1s", "--",
        "sh", "-c", 'echo tick >> "$0"; [ "$(wc -l < "$0")" -ne 1 ]', str(target),
    )  # fmt: skip
    assert added.wait(timeout=30) == 0, processes.output(added)
    run = processes.rota(
        "run", f"{source}:app", "--url", url, "--no-web", "--commands",
        "-Q", "default", "-c", "2", "-m", "threads", "--worker-host", "web-9",
    )  # fmt: skip
    ran = processes.rota("schedules", "run-now", "tick", "--url", url)
    assert ran.wait(timeout=30) == 0, processes.output(ran)
    [job_id] = re.findall(r"^[0-9a-f]{32}$", processes.output(ran), re.MULTILINE)
    store = open_store(url)
    try:
        wait_for(
            lambda: (job := store.get_job(job_id)) is not None and job.state == JobState.SUCCEEDED,
            timeout=30,
            what="the command's retry to succeed",
        )
        job = store.get_job(job_id)
        assert job is not None and job.attempt == 2
    finally:
        store.close()
    assert target.read_text() == "tick\ntick\n"
    started = "queues default, concurrency 2, mode threads, host web-9\n"
    assert started in processes.output(run), "the short options and the host, as rota worker says"
    _stop(run)
