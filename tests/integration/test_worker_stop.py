"""How a real ``rota worker`` stops: a job goes back to the queue only once
whatever ran it is dead, in every mode and for commands; and the stop keeps
to its deadline when the store cannot be reached."""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from helpers import APPS, appended_lines, wait_for, written
from integration.redis_servers import PrivateRedis, private_redis
from procs import ROTA, Processes
from rota import App
from rota.models import JobState
from rota.task import JobHandle

__all__ = ["private_redis"]  # fixtures


def ticks(path: Path) -> int:
    return len(appended_lines(path))


def released(handle: JobHandle[object]) -> bool:
    job = handle.job()
    return job.state is JobState.QUEUED and job.history[-1]["event"] == "released"


def assert_no_tick_after_release(
    processes: Processes, worker: subprocess.Popen[bytes], handle: JobHandle[object], path: Path
) -> None:
    """Stop ``worker`` while its job ticks into ``path``; once the job is back
    in the queue, nothing may tick any more."""
    wait_for(lambda: ticks(path) >= 3, timeout=30, what="the job to tick")
    worker.send_signal(signal.SIGTERM)
    wait_for(lambda: released(handle), timeout=20, interval=0.005, what="the job released")
    seen = ticks(path)
    assert worker.wait(timeout=20) == 0, processes.output(worker)
    # (whatever ran the job is dead once the worker has exited)
    assert ticks(path) == seen, (
        f"ticked {ticks(path) - seen} time(s) after the release\n{processes.output(worker)}"
    )


@pytest.mark.parametrize(
    ("mode", "task"), [("processes", "ticking"), ("async", "aticking")], ids=["processes", "async"]
)
def test_a_job_goes_back_to_the_queue_only_once_its_runner_is_dead(
    url: str,
    sender_of: Callable[[str, str], App],
    processes: Processes,
    app_path: Callable[[str], str],
    tmp_path: Path,
    mode: str,
    task: str,
) -> None:
    sender = sender_of("modes", url)
    worker = processes.rota(
        "worker", app_path("modes"), "--url", url, "--mode", mode, "-c", "1", "--grace", "0.5"
    )
    path = tmp_path / "ticks"
    handle = sender.tasks[task].send(str(path))
    assert_no_tick_after_release(processes, worker, handle, path)
    assert "released 1 unfinished job(s)" in processes.output(worker)


def test_a_thread_task_left_running_is_asked_to_stop_before_its_release(
    url: str,
    sender_of: Callable[[str, str], App],
    processes: Processes,
    app_path: Callable[[str], str],
    tmp_path: Path,
) -> None:
    """A thread cannot be killed: a task that reads ``cancelled`` stops."""
    sender = sender_of("modes", url)
    worker = processes.rota("worker", app_path("modes"), "--url", url, "-c", "1", "--grace", "0.5")
    path = tmp_path / "ticks"
    handle = sender.tasks["polite_ticking"].send(str(path))
    wait_for(lambda: ticks(path) >= 3, timeout=30, what="the job to tick")
    worker.send_signal(signal.SIGTERM)
    ended = Path(f"{path}.end")
    assert written(ended, timeout=20, what="the task to stop") == "stopped"
    assert worker.wait(timeout=20) == 0, processes.output(worker)
    assert released(handle)


def test_the_same_signal_twice_at_once_is_one_request_to_drain(
    url: str,
    sender_of: Callable[[str, str], App],
    processes: Processes,
    app_path: Callable[[str], str],
    tmp_path: Path,
) -> None:
    """GNU timeout signals its command, then its own process group: the
    worker drains as for one signal, not as for a second one."""
    sender = sender_of("modes", url)
    worker = processes.command(
        "timeout", "600", ROTA, "worker", app_path("modes"), "--url", url,
        "--mode", "processes", "-c", "1", "--grace", "0.5",
    )  # fmt: skip
    path = tmp_path / "ticks"
    handle = sender.tasks["ticking"].send(str(path))
    wait_for(lambda: ticks(path) >= 3, timeout=30, what="the job to tick")
    worker.send_signal(signal.SIGTERM)  # to timeout, which passes it on twice
    assert worker.wait(timeout=20) == 0, processes.output(worker)
    assert "second signal" not in processes.output(worker)
    assert released(handle)


@pytest.mark.parametrize("mode", [(), ("--mode", "processes")], ids=["threads", "processes"])
def test_a_command_goes_back_to_the_queue_only_once_its_group_is_dead(
    url: str,
    commands_sender: App,
    processes: Processes,
    tmp_path: Path,
    mode: tuple[str, ...],
) -> None:
    worker = processes.rota(
        "worker", f"{APPS / 'commands.py'}:app", "--url", url, "-c", "1", "--grace", "0.5", *mode
    )
    path = tmp_path / "ticks"
    handle = commands_sender.tasks["ticker"].send(extra_args=[str(path)])
    assert_no_tick_after_release(processes, worker, handle, path)


@pytest.mark.parametrize(
    ("mode", "task"),
    [("threads", "ticking"), ("processes", "ticking"), ("async", "aticking")],
    ids=["threads", "processes", "async"],
)
def test_a_stop_with_the_store_unreachable_keeps_to_its_deadline(
    mode: str,
    task: str,
    private_redis: type[PrivateRedis],
    sender_of: Callable[[str, str], App],
    processes: Processes,
    app_path: Callable[[str], str],
    tmp_path: Path,
) -> None:
    """The store's calls each wait out its ``retry_for`` (30 s) in an outage:
    past the stop's deadline (the grace plus a few seconds) the worker gives
    up on them, says what it left undone, and exits."""
    server = private_redis()
    url = f"redis://{server.address}/0"
    sender = sender_of("modes", url)
    worker = processes.rota(
        "worker", app_path("modes"), "--url", url, "-m", mode, "-c", "2", "--grace", "1"
    )
    path = tmp_path / "ticks"
    sender.tasks[task].send(str(path))
    wait_for(lambda: ticks(path) >= 3, timeout=30, what="the job to tick")
    sender.close()
    server.stop()
    began = time.monotonic()
    worker.send_signal(signal.SIGTERM)
    try:
        worker.wait(timeout=15)
    except subprocess.TimeoutExpired:
        pytest.fail(f"still stopping after 15 s\n{processes.output(worker)}")
    took = time.monotonic() - began
    output = processes.output(worker)
    assert worker.returncode == 0, output
    assert took < 1 + 3 + 2, output  # the grace, the stop's margin, and some slack
    assert "1 unfinished job(s) not released (their leases return them)" in output, output
