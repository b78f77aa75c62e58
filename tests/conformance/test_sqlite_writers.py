"""SQLite writers take turns in a line (``rota.stores.sqlite._writers``):
a writer waits while another process holds the line and writes once it is
let go; a forked child lines up on its own, never on its parent's hold;
a thread that gets no turn within the timeout is told the store is
unavailable."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conformance.support import enqueue_one, new_job
from helpers import wait_for
from rota.errors import StoreUnavailable
from rota.stores import open_store
from rota.stores.sqlite import _writers
from rota.stores.sqlite._writers import WriterLine

#: A process that holds the line of the database at argv[1] until a line
#: comes on its stdin.
HOLDER = """
import sys
from rota.stores.sqlite._writers import WriterLine
with WriterLine(sys.argv[1]).turn():
    print("holding", flush=True)
    sys.stdin.readline()
"""


def test_a_writer_waits_while_another_process_holds_the_line(tmp_path: Path) -> None:
    path = str(tmp_path / "jobs.db")
    store = open_store(f"sqlite:///{path}")
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, path],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdin is not None and holder.stdout is not None
    done = threading.Event()
    job = new_job(1, queue="q")

    def write() -> None:
        enqueue_one(store, job)
        done.set()

    writer = threading.Thread(target=write, daemon=True)
    try:
        assert holder.stdout.readline().strip() == "holding"
        writer.start()
        assert not done.wait(0.3), "wrote while another process held the line"
        holder.stdin.write("go\n")
        holder.stdin.flush()
        wait_for(done.is_set, timeout=10, what="the write, once the line is let go")
        assert holder.wait(timeout=10) == 0
        assert store.get_job(job.id) is not None
    finally:
        holder.kill()
        writer.join(10)
        store.close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork() is POSIX")
def test_a_forked_child_lines_up_on_its_own(tmp_path: Path) -> None:
    line = WriterLine(str(tmp_path / "jobs.db"))
    read_end, write_end = os.pipe()
    with line.turn():
        pid = os.fork()
        if pid == 0:  # the child: its turn comes once the parent lets go
            try:
                with line.turn():
                    os.write(write_end, b"in")
            finally:
                os._exit(0)
        try:
            os.set_blocking(read_end, False)
            time.sleep(0.3)  # the child's chance to take the line too early
            with pytest.raises(BlockingIOError):
                os.read(read_end, 2)
        except BaseException:
            os.kill(pid, 9)
            raise
    try:
        got = select.select([read_end], [], [], 10)[0]
        assert got and os.read(read_end, 2) == b"in", "the child got no turn after its parent's"
    finally:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        os.close(read_end)
        os.close(write_end)
        line.close()


def test_a_thread_given_no_turn_in_time_finds_the_store_unavailable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_writers, "TURN_TIMEOUT", 0.2)
    line = WriterLine(str(tmp_path / "jobs.db"))
    errors: list[BaseException] = []

    def write() -> None:
        try:
            with line.turn():
                pass
        except StoreUnavailable as exc:
            errors.append(exc)

    with line.turn():
        other = threading.Thread(target=write)
        other.start()
        other.join(10)
    assert len(errors) == 1 and "no turn to write within 0.2 s" in str(errors[0])
    with line.turn():  # and the line still works
        pass
    line.close()
