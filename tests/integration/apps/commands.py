"""A test app of command tasks."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from rota import App

app = App(commands=True)  # runs rota.cmd jobs too (rota send --cmd)

FORKER = str(Path(__file__).with_name("forker.py"))

tree = app.command("tree", [sys.executable, FORKER], timeout=1, grace=0.5)
long_tree = app.command("long_tree", [sys.executable, FORKER], grace=0.5)
#: A long tree on a short lease, for a worker stalled past it.
leased_tree = app.command("leased_tree", [sys.executable, FORKER], grace=0.5, lease=2.0)
exits = app.command(
    "exits", ["sh", "-c", 'echo out; echo "err $0" >&2; exit "$0"'], ok_codes=(0, 3)
)
flaky = app.command(
    "flaky",
    ["sh", "-c", 'echo "failing, run $(cat "$0" 2>/dev/null)" >&2; echo x >> "$0"; exit 1'],
    retries=2,
    backoff=(0.2, 0.2),
)
chatty = app.command("chatty", [sys.executable, "-c", "print('a' * 100 + 'END')"], output_cap=16)
#: Appends a line to the file it is given every 50 ms, ignoring SIGTERM.
ticker = app.command(
    "ticker",
    ["sh", "-c", 'trap "" TERM; while :; do echo "$$" >> "$0"; sleep 0.05; done'],
    grace=1,
)
#: Writes its pid to the file it is given, then runs until SIGTERM, after
#: which it takes 6 s to close (writing ``closed``): within its grace.
slow_close = app.command(
    "slow_close",
    [
        "sh",
        "-c",
        'trap "sleep 6; echo closed >> \\"$0\\"; exit 0" TERM; echo $$ >> "$0"; '
        "while :; do sleep 0.05; done",
    ],
    grace=20,
)

#: Writes its pid to the file it is given and ignores SIGTERM: killed at the
#: end of its grace, as long as a pool's margin after its own grace.
deaf = app.command("deaf", ["sh", "-c", 'trap "" TERM; echo $$ >> "$0"; sleep 60 & wait'], grace=5)

#: Write the pids of their guard, of their shell and of its sleep to the file
#: they are given (one line per attempt), and run for a minute. The first
#: ignores SIGTERM, its sleep too; the second ends on it. Their grace is far
#: longer than their lease.
leased_deaf = app.command(
    "leased_deaf",
    ["sh", "-c", 'trap "" TERM; sleep 60 & echo "$PPID $$ $!" >> "$0"; wait'],
    grace=120,
    lease=6.0,
)
leased_obedient = app.command(
    "leased_obedient",
    ["sh", "-c", 'sleep 60 & echo "$PPID $$ $!" >> "$0"; wait'],
    grace=120,
    lease=6.0,
)


@app.task(name="fork_and_linger")
def fork_and_linger(path: str) -> None:
    """Forks a child that writes its pid to ``path`` and outlives the job
    (and its worker) by up to a minute, as a task's own forks may."""
    if os.fork() == 0:
        try:
            Path(path + ".part").write_text(str(os.getpid()))
            os.replace(path + ".part", path)
            time.sleep(60)
        finally:
            os._exit(0)
