"""What a real ``rota worker`` prints per job, who ran each attempt, and stuck threads."""

from __future__ import annotations

import json
import re
import signal
import socket
import subprocess
from collections.abc import Callable

import pytest

from helpers import wait_for
from procs import Processes
from rota import App, JobFailed
from rota.models import JobState

BANNER = "rota worker: "


@pytest.fixture
def sender(sender_of: Callable[[str, str], App], url: str) -> App:
    """The joblines app, sending to the test's store."""
    return sender_of("joblines", url)


def _run_jobs(
    sender: App, processes: Processes, app_path: Callable[[str], str], url: str, *flags: str
) -> tuple[str, str, str]:
    """Start a worker, run one good and one failing job (two attempts), stop
    the worker; return its whole output and the two job ids."""
    proc = processes.rota("worker", app_path("joblines"), "--url", url, *flags)
    good = sender.tasks["ok"].send(7)
    bad = sender.tasks["boom"].send()
    assert good.result(timeout=30) == 7
    with pytest.raises(JobFailed, match="ValueError: boom"):
        bad.result(timeout=30)
    _stop(proc)
    return processes.output(proc), good.id, bad.id


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 0


def test_a_line_per_finished_job_at_info_and_a_failure_for_good_at_warning(
    url: str, sender: App, processes: Processes, app_path: Callable[[str], str]
) -> None:
    out, good, bad = _run_jobs(sender, processes, app_path, url)

    ok_line = re.search(rf"INFO rota\.worker: ok {good} attempt 1 succeeded in [\d.]+ ms\n", out)
    assert ok_line, out
    retry = re.search(
        rf"INFO rota\.worker: boom {bad} attempt 1 failed in [\d.]+ ms: ValueError: boom;"
        r" runs again in \d+\.\d s\n",
        out,
    )
    assert retry, out
    final = re.search(
        rf"WARNING rota\.worker: boom {bad} attempt 2 failed in [\d.]+ ms: ValueError: boom\n",
        out,
    )
    assert final, out
    assert "second line" not in out
    assert len(re.findall(rf" {good} attempt ", out)) == 1
    assert len(re.findall(rf" {bad} attempt ", out)) == 2


def test_each_attempt_records_the_worker_and_host(
    url: str, sender: App, processes: Processes, app_path: Callable[[str], str]
) -> None:
    _, good, bad = _run_jobs(sender, processes, app_path, url)
    host = socket.gethostname()
    jobs = {job_id: sender.store.get_job(job_id) for job_id in (good, bad)}
    records = {
        job_id: [(h["attempt"], h["event"], h["host"]) for h in job.history]
        for job_id, job in jobs.items()
        if job is not None
    }
    assert records == {
        good: [(1, "succeeded", host)],
        bad: [(1, "failed", host), (2, "failed", host)],
    }
    for job in jobs.values():
        assert job is not None
        assert all(h["worker"].startswith(f"{host}-") for h in job.history)


def test_quiet_prints_only_the_jobs_that_failed_for_good(
    url: str, sender: App, processes: Processes, app_path: Callable[[str], str]
) -> None:
    out, good, bad = _run_jobs(sender, processes, app_path, url, "--quiet")
    assert good not in out
    assert re.findall(rf" {bad} attempt \d", out) == [f" {bad} attempt 2"]
    assert " INFO " not in out
    levels = re.findall(r"^\S+ \S+ ([A-Z]+) ", out, re.MULTILINE)
    assert set(levels) <= {"WARNING", "ERROR"}, out


def test_json_log_lines(
    url: str, sender: App, processes: Processes, app_path: Callable[[str], str]
) -> None:
    out, good, bad = _run_jobs(sender, processes, app_path, url, "--log-format", "json")
    records = [json.loads(line) for line in out.splitlines() if not line.startswith(BANNER)]
    assert records and all(
        {"time", "level", "logger", "message"} <= record.keys() for record in records
    )
    jobs = [r for r in records if "job_id" in r]
    fields = [(r["job_id"], r["task"], r["attempt"], r["outcome"], r["error"]) for r in jobs]
    expected = [
        (good, "ok", 1, "succeeded", None),
        (bad, "boom", 1, "retrying", "ValueError: boom"),
        (bad, "boom", 2, "failed", "ValueError: boom"),
    ]
    assert sorted(fields, key=str) == sorted(expected, key=str)
    levels = {r["job_id"] + str(r["attempt"]): r["level"] for r in jobs}
    assert levels == {f"{good}1": "info", f"{bad}1": "info", f"{bad}2": "warning"}
    assert all(r["logger"] == "rota.worker" for r in jobs)
    assert all(isinstance(r["duration_ms"], float | int) and r["duration_ms"] >= 0 for r in jobs)
    assert jobs[0]["time"].endswith("+00:00")


def test_a_timed_out_thread_gives_its_slot_to_a_fresh_one(
    url: str, sender: App, processes: Processes, app_path: Callable[[str], str]
) -> None:
    proc = processes.rota(
        "worker", app_path("joblines"), "--url", url, "--concurrency", "1", "--quiet"
    )
    sleep = 6.0  # past the task's 1 s timeout and the checks made meanwhile
    sleeper = sender.tasks["sleeper"].send(sleep)
    wait_for(lambda: sender.store.workers(), timeout=20, what="the worker's heartbeat")
    nxt = sender.tasks["ok"].send(1)
    assert nxt.result(timeout=5) == 1
    slept, ran = sender.store.get_job(sleeper.id), sender.store.get_job(nxt.id)
    assert slept is not None and ran is not None
    assert slept.state is JobState.FAILED and slept.started_at is not None
    assert ran.started_at is not None
    assert ran.started_at - slept.started_at < 2.5, "the next job waited for the stuck thread"
    assert "JobTimeout" in (slept.error or "")

    def stuck() -> int:
        return sum(info.stuck for info in sender.store.workers())

    wait_for(lambda: stuck() == 1, timeout=5, what="stuck=1 in the heartbeat")
    assert sender.tasks["ok"].send(2).result(timeout=5) == 2  # still one free slot
    wait_for(lambda: stuck() == 0, timeout=20, what="stuck=0 once the sleeper returned")
    assert slept.started_at + sleep <= sender.store.now() + 0.5
    _stop(proc)
