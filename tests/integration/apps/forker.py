"""A process tree for command tests: it, two children with a grandchild each,
and a shell whose ``sleep`` ignores SIGTERM. Every pid is appended to the file
named by argv[1]; then everything sleeps."""

from __future__ import annotations

import os
import subprocess
import sys
import time

GRANDPARENT = (
    "import subprocess, sys, time\n"
    "child = subprocess.Popen(['sleep', '60'])\n"
    "open(sys.argv[1], 'a').write(f'{child.pid}\\n')\n"
    "time.sleep(60)\n"
)


def note(path: str, pid: int) -> None:
    with open(path, "a") as file:
        file.write(f"{pid}\n")


def main(path: str) -> None:
    note(path, os.getpid())
    for _ in range(2):
        note(path, subprocess.Popen([sys.executable, "-c", GRANDPARENT, path]).pid)
    stubborn = 'trap "" TERM; sleep 60 & echo $! >> "$0"; wait'
    note(path, subprocess.Popen(["sh", "-c", stubborn, path]).pid)
    time.sleep(60)


if __name__ == "__main__":
    main(sys.argv[1])
