"""The leader of a command's process group: it stops the group when the
worker that started it dies, even by SIGKILL.

A worker runs ``python -I -S _command_guard.py WATCH STATUS GRACE ARGV...``
(this file by its path, with the standard library only) as the leader of a
new session. The guard starts ``ARGV`` in its own group, with the signals it
ignores back at their defaults, and writes ``ok`` to the pipe ``STATUS``, or
why the command could not start (``errno``, the file, the message, one per
line); then it waits for the command. The worker holds the only writing end
of the pipe ``WATCH``: when the worker is gone, the guard reads its end of
file, sends SIGTERM to the group and SIGKILL ``GRACE`` seconds later.

The guard ignores SIGTERM, SIGINT and SIGHUP, which the worker sends to the
whole group on a timeout or a cancel: the command gets them, and the guard
ends as the command ended (its exit code, or killed by the same signal), so
the worker sees the command's own end.
"""

from __future__ import annotations

import os
import resource
import signal
import sys
import threading
import time

#: Signals the guard ignores and the command gets back at their defaults
#: (Python itself ignores SIGPIPE and SIGXFSZ, as subprocess undoes too).
_PASSED_ON = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
_DEFAULTS = (*_PASSED_ON, signal.SIGPIPE, signal.SIGXFSZ)


#: Set once the worker is gone: the watch then ends the guard, with its group.
_orphaned = threading.Event()


def _watch(fd: int, grace: float) -> None:
    """Block until the worker's end of the pipe closes, then stop the group:
    SIGTERM, and SIGKILL ``grace`` seconds later (this process included)."""
    while os.read(fd, 4096):
        pass
    _orphaned.set()
    os.killpg(0, signal.SIGTERM)
    time.sleep(grace)
    os.killpg(0, signal.SIGKILL)


def _end_as(status: int) -> None:
    """Exit as the command whose wait status is ``status`` did."""
    if os.WIFSIGNALED(status):
        signum = os.WTERMSIG(status)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # the command's core, not the guard's
        if signum != signal.SIGKILL:
            signal.signal(signum, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [signum])
        os.kill(os.getpid(), signum)
        os._exit(128 + signum)  # a signal that did not end this process
    os._exit(os.waitstatus_to_exitcode(status))


def main(argv: list[str]) -> None:
    watch, status, grace, command = int(argv[0]), int(argv[1]), float(argv[2]), argv[3:]
    for signum in _PASSED_ON:
        signal.signal(signum, signal.SIG_IGN)
    os.set_inheritable(watch, False)
    os.set_inheritable(status, False)
    try:
        pid = os.posix_spawnp(command[0], command, os.environ, setsigdef=_DEFAULTS)
    except OSError as exc:
        os.write(status, f"{exc.errno}\n{exc.filename or ''}\n{exc.strerror or exc}".encode())
        os._exit(127)
    os.write(status, b"ok")
    os.close(status)
    threading.Thread(target=_watch, args=(watch, grace), daemon=True).start()
    _, wait_status = os.waitpid(pid, 0)
    if _orphaned.is_set():  # what outlives the command gets its grace, then SIGKILL
        threading.Event().wait()
    _end_as(wait_status)


if __name__ == "__main__":
    main(sys.argv[1:])
