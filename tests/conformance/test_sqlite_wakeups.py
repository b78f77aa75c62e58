"""SQLite wake-ups across processes: a commit that may give work wakes the
workers waiting in other processes at once, through a Unix socket each
waiting process keeps in the database's wake-up directory, with no polling
(the store looks at ``data_version`` only once a second, as a safety net)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

from conformance.support import enqueue_one, new_job
from helpers import wait_for
from rota.stores import open_store
from rota.stores.sqlite._wakeups import wake_directory

#: A process that claims (nothing), says so, then waits up to 20 s for work
#: and prints how long it waited.
WAITER = """
import sys, time
from rota.stores import open_store
store = open_store(sys.argv[1])
assert store.claim("w", ["q"], 1) == []
print("waiting", flush=True)
start = time.monotonic()
store.wait(["q"], 20.0)
print(f"{time.monotonic() - start:.3f}", flush=True)
store.close()
"""


def _waiter(url: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", WAITER, url], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "waiting"
    return proc


def test_a_commit_wakes_a_worker_waiting_in_another_process_at_once(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'jobs.db'}"
    store = open_store(url)
    proc = _waiter(url)
    try:
        directory = Path(wake_directory(str(tmp_path / "jobs.db")))
        wait_for(lambda: any(directory.glob("*.sock")), timeout=10, what="the waiter's socket")
        enqueue_one(store, new_job(1, queue="q"))
        out, _ = proc.communicate(timeout=30)
    finally:
        proc.kill()
        store.close()
    waited = float(out.strip())
    assert waited < 0.5, f"woken after {waited} s: by the once-a-second safety net, not at once"
    assert proc.returncode == 0
    assert not list(directory.glob("*.sock")), "the waiter's socket outlives it"


def test_the_socket_of_a_killed_waiter_is_removed_by_the_next_wake_up(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'jobs.db'}"
    store = open_store(url)
    proc = _waiter(url)
    directory = Path(wake_directory(str(tmp_path / "jobs.db")))
    try:
        wait_for(lambda: any(directory.glob("*.sock")), timeout=10, what="the waiter's socket")
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(30)
        assert list(directory.glob("*.sock")), "a killed process cannot remove its socket"
        enqueue_one(store, new_job(1, queue="q"))
        assert not list(directory.glob("*.sock"))
    finally:
        proc.kill()
        store.close()


def test_a_wake_directory_stays_within_a_socket_path(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 90) / "jobs.db"
    directory = wake_directory(str(deep))
    assert len(os.path.join(directory, f"{2**22}-{2**48:x}.sock")) < 104
    assert wake_directory(str(deep)) == directory  # every process finds the same one
    short = wake_directory("/srv/jobs.db")
    assert short == "/srv/jobs.db-wake"
    assert socket.AF_UNIX  # the platform this store's wake-ups are tested on
