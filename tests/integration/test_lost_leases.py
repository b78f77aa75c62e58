"""A worker that learns its lease on a running job was lost (it was stalled,
or cut off, past the lease, and the store gave the job back to its queue)
stops that attempt: another worker may run the job now, and a command left
running would do its work, and hold its load, twice."""

from __future__ import annotations

import os
import signal
import sqlite3
from collections.abc import Callable
from pathlib import Path

from helpers import wait_for
from procs import Processes, alive, pids_in, tree_started
from rota import App


def _write_locked(url: str) -> bool:
    """Whether a process holds the write lock of the SQLite database of ``url``."""
    connection = sqlite3.connect(url.removeprefix("sqlite:///"), timeout=0)
    try:
        connection.execute("BEGIN IMMEDIATE")
        connection.rollback()
        return False
    except sqlite3.OperationalError:  # database is locked
        return True
    finally:
        connection.close()


def freeze_between_writes(pid: int, url: str) -> None:
    """SIGSTOP process ``pid``; on SQLite, at a moment it holds no write lock:
    one frozen inside a write would hold every other writer back (SQLite has
    one writer at a time), the store's recovery included."""
    for _ in range(20):
        os.kill(pid, signal.SIGSTOP)
        if not url.startswith("sqlite") or not _write_locked(url):
            return
        os.kill(pid, signal.SIGCONT)
        wait_for(lambda: not _write_locked(url), timeout=10, what="the worker's write to end")
    raise AssertionError("the worker was inside a write at every one of 20 freezes")


def test_a_command_whose_lease_was_lost_while_its_worker_was_frozen_is_stopped(
    url: str,
    processes: Processes,
    app_path: Callable[[str], str],
    tree_pids: Path,
    commands_sender: App,
) -> None:
    worker = processes.rota("worker", app_path("commands"), "--url", url)
    handle = commands_sender.tasks["leased_tree"].send(extra_args=[str(tree_pids)])
    wait_for(lambda: tree_started(tree_pids), timeout=30, what="the command's tree to start")
    first_tree = pids_in(tree_pids)

    freeze_between_writes(worker.pid, url)  # the worker only: its command runs on
    try:
        recovered = wait_for(
            lambda: handle.id in commands_sender.store.recover(),
            timeout=15,
            interval=0.2,
            what="the frozen worker's lease to run out",
        )
        assert recovered
        assert all(map(alive, first_tree)), "the command ran on while its worker was frozen"
    finally:
        os.kill(worker.pid, signal.SIGCONT)

    wait_for(
        lambda: not any(map(alive, first_tree)),
        timeout=10,
        interval=0.1,
        what="the thawed worker to stop the command whose lease it lost",
    )
    wait_for(
        lambda: "was lost" in processes.output(worker),
        timeout=10,
        what="the worker to say why it stopped the command",
    )
    job = handle.job()
    assert job.lost == 1
    assert [entry["event"] for entry in job.history][:1] == ["lost"]
    assert worker.poll() is None, "the worker serves on"
