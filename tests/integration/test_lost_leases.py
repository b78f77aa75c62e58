"""A worker that learns its lease on a running job was lost (it was stalled,
or cut off, past the lease, and the store gave the job back to its queue)
stops that attempt: another worker may run the job now, and a command left
running would do its work, and hold its load, twice."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from pathlib import Path

from helpers import wait_for
from procs import Processes, alive, pids_in, tree_started
from rota import App


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

    os.kill(worker.pid, signal.SIGSTOP)  # the worker only: its command runs on
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
