"""Job logs under real ``rota worker`` processes, read with ``rota jobs logs``."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from helpers import wait_for
from procs import ROTA, Processes
from rota import App
from rota.models import JobState


@pytest.fixture
def sender(sender_of: Callable[[str, str], App], url: str) -> App:
    """The logging test app, sending to the test's store."""
    return sender_of("logging_app", url)


def start_worker(
    processes: Processes, app_path: Callable[[str], str], url: str, *extra: str, cap: int = 0
) -> None:
    env = {"ROTA_TEST_LOG_CAP": str(cap)} if cap else None
    processes.rota("worker", app_path("logging_app"), "--url", url, *extra, env=env)


def rota_logs(url: str, job_id: str, *extra: str) -> str:
    done = subprocess.run(
        [ROTA, "jobs", "logs", job_id, "--url", url, *extra],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout


def test_nul_in_output_and_errors_is_kept_written_out_on_every_store(
    url: str, sender: App, processes: Processes, app_path: Callable[[str], str]
) -> None:
    # PostgreSQL's text refuses NUL: one unwritable outcome once stopped a worker's reports
    start_worker(processes, app_path, url, "--commands")
    task = sender.tasks["nul"].send()
    command = sender.tasks["nul_command"].send()
    for handle in (task, command):
        wait_for(lambda h=handle: h.status() == "failed", timeout=30, what="the job to fail")
    assert task.job().error == "ValueError: bad\\x00byte"
    assert "before\\x00after\n" in rota_logs(url, task.id)
    assert "err\\x00or" in (command.job().error or "")
    assert "out\\x00put\n" in rota_logs(url, command.id)
    assert sender.tasks["chatty"].send(False).result(timeout=30) == "done", "it reports on"


@pytest.mark.parametrize("mode", ["threads", "processes"])
def test_prints_logger_lines_and_stderr_are_kept_per_attempt(
    mode: str, url: str, sender: App, processes: Processes, app_path: Callable[[str], str]
) -> None:
    start_worker(processes, app_path, url, "--mode", mode, "--concurrency", "2")
    handle = sender.tasks["chatty"].send(True)
    assert handle.result(timeout=30) == "done"
    out = rota_logs(url, handle.id)
    first, second = out.split("--- attempt 2 ---\n")
    assert first.startswith("--- attempt 1 ---\n")
    for number, part in ((1, first), (2, second)):
        assert f"printed by attempt {number}\n" in part
        assert f"stderr of attempt {number}\n" in part
        assert f"INFO rota.task.chatty: logged by attempt {number}\n" in part
    only_second = rota_logs(url, handle.id[:8], "--attempt", "2")
    assert "attempt 1" not in only_second and "printed by attempt 2\n" in only_second
    chunks = sender.store.job_logs(handle.id, attempt=1)
    assert {c.stream for c in chunks} == {"stdout", "stderr", "log"}


def test_async_mode_keeps_a_coroutines_output(
    url: str, sender: App, processes: Processes, app_path: Callable[[str], str]
) -> None:
    start_worker(processes, app_path, url, "--mode", "async")
    handle = sender.tasks["achatty"].send()
    assert handle.result(timeout=30) == "done"
    out = rota_logs(url, handle.id)
    assert "printed by a coroutine\n" in out
    assert "WARNING rota.task.achatty: logged by a coroutine\n" in out


def test_a_commands_output_is_kept(
    url: str, sender: App, processes: Processes, app_path: Callable[[str], str]
) -> None:
    start_worker(processes, app_path, url)
    handle = sender.tasks["shout"].send()
    assert handle.result(timeout=30)["exit_code"] == 0
    chunks = sender.store.job_logs(handle.id)
    assert sorted((c.stream, c.data) for c in chunks) == [
        ("stderr", "err line\n"),
        ("stdout", "no newline"),
        ("stdout", "out line\n"),
    ]


def test_over_the_cap_the_oldest_lines_are_dropped_and_noted(
    url: str, sender: App, processes: Processes, app_path: Callable[[str], str]
) -> None:
    start_worker(processes, app_path, url, cap=1000)
    handle = sender.tasks["flood"].send(200)  # 200 lines of 20 bytes
    assert handle.result(timeout=30) == 200
    lines = rota_logs(url, handle.id, "--attempt", "1").splitlines()
    assert lines[0] == "[... 3000 bytes dropped ...]"
    assert lines[1:] == [f"line {i:014d}" for i in range(150, 200)]


def test_follow_prints_lines_while_the_job_runs_and_returns_when_it_ends(
    url: str,
    sender: App,
    processes: Processes,
    app_path: Callable[[str], str],
    tmp_path: Path,
) -> None:
    start_worker(processes, app_path, url)
    gate = tmp_path / "gate"
    handle = sender.tasks["slow"].send(str(gate))
    out_path = tmp_path / "follow.out"
    with out_path.open("wb") as out:
        follower = subprocess.Popen(
            [ROTA, "jobs", "logs", handle.id, "--url", url, "--follow"], stdout=out
        )
    try:
        wait_for(lambda: "before the gate" in out_path.read_text(), timeout=30, what="a line")
        assert follower.poll() is None, "still following while the job runs"
        assert handle.job().state is JobState.RUNNING
        gate.touch()
        assert follower.wait(timeout=30) == 0
    finally:
        if follower.poll() is None:
            follower.kill()
            follower.wait(10)
    assert out_path.read_text().endswith("before the gate\nafter the gate\n")


def test_logs_go_with_the_job(
    url: str, sender: App, processes: Processes, app_path: Callable[[str], str]
) -> None:
    start_worker(processes, app_path, url)
    handle = sender.tasks["chatty"].send(False)
    assert handle.result(timeout=30) == "done"
    assert sender.store.job_logs(handle.id)
    assert sender.store.purge_finished(0.0) >= 1
    assert sender.store.job_logs(handle.id) == []
