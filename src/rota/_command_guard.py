"""The leader of a command's process group: it stops the group when the
worker that started it dies, even by SIGKILL.

A worker runs ``python -I -S _command_guard.py WATCH STATUS GRACE LEASE
ARGV...`` (this file by its path, with the standard library only) as the
leader of a new session. The guard starts ``ARGV`` in its own group, with
the signals it ignores back at their defaults, and writes ``ok`` to the
pipe ``STATUS``, or why the command could not start (``errno``, the file,
the message, one per line); then it waits for the command. The worker holds
the only writing end of the pipe ``WATCH``: when the worker is gone, the
guard reads its end of file and sends SIGTERM to the group, then SIGKILL
once :func:`orphan_grace` has passed: ``GRACE`` seconds, but never more than
half the job's ``LEASE`` (``inf`` when it has none). The dead worker renews
that lease no more, and the lease it last renewed (a running job's lease is
renewed every second, or every third of the lease if shorter) still has
more than half of its length to run: the group is dead before the job can
be given to another worker, whatever ``GRACE`` is. Once the command and
every process left in its group are gone, the guard ends at once (it looks
every :data:`_POLL` seconds once the command has exited), as the command
ended.

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
#: The share of a job's lease that an orphaned group gets between SIGTERM and SIGKILL, at most.
LEASE_SHARE = 0.5
#: Seconds between two looks for what is left of an orphaned group, once its command exited.
_POLL = 0.1


#: Set once the worker is gone: the watch then ends the guard, with its group.
_orphaned = threading.Event()


def orphan_grace(grace: float, lease: float) -> float:
    """Seconds between an orphaned group's SIGTERM and its SIGKILL: ``grace``,
    but no more than :data:`LEASE_SHARE` of the job's ``lease``."""
    return min(grace, lease * LEASE_SHARE)


def _watch(fd: int, grace: float, lease: float) -> None:
    """Block until the worker's end of the pipe closes, then stop the group:
    SIGTERM, and SIGKILL :func:`orphan_grace` seconds later (this process
    included), unless the group is gone first (then :func:`main` has ended
    the guard)."""
    while os.read(fd, 4096):
        pass
    _orphaned.set()
    os.killpg(0, signal.SIGTERM)
    time.sleep(orphan_grace(grace, lease))
    os.killpg(0, signal.SIGKILL)


def others_in_group() -> bool:
    """Whether a process of this one's group other than itself still runs
    (zombies do not count). Without ``/proc`` to read, True: the group then
    gets its whole grace."""
    me = os.getpid()
    group = os.getpgid(0)
    try:
        entries = os.listdir("/proc")
    except OSError:
        return True
    for entry in entries:
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as file:
                stat = file.read()
        except OSError:  # gone meanwhile
            continue
        # "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) >= 3 and int(fields[2]) == group and fields[0] != b"Z":
            return True
    return False


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
    watch, status, command = int(argv[0]), int(argv[1]), argv[4:]
    grace, lease = float(argv[2]), float(argv[3])
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
    threading.Thread(target=_watch, args=(watch, grace, lease), daemon=True).start()
    _, wait_status = os.waitpid(pid, 0)
    if _orphaned.is_set():  # what outlives the command gets SIGKILL with the watch's
        while others_in_group():
            time.sleep(_POLL)
    _end_as(wait_status)


if __name__ == "__main__":
    main(sys.argv[1:])
