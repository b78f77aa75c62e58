"""What a stretch of a measurement costs: CPU time and Redis commands.

A :class:`Meter` reads, at one moment, the CPU time (user + system) of every
process in some process groups (the workers' groups) and of every descendant
of those (a supervisor may start its children in sessions of their own), and
of one ``redis-server``, plus that server's ``INFO commandstats``. Two
readings, before and after a drain, give what the drain cost; :func:`per_job`
divides it by the jobs run in between.

CPU times come from ``/proc/PID/stat`` (Linux only): ``utime + stime`` of
each live process plus ``cutime + cstime``, the time of its children that
ended and were waited for, so that a pool that forks a child per job (or
replaces its children) is counted whole. Resolution: one clock tick
(``SC_CLK_TCK``, usually 10 ms) per process and reading.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import redis

PROC = Path("/proc")
TICKS = os.sysconf("SC_CLK_TCK")
#: The counter each job's own round trip increments (``apps/_common.py``).
BODY = "bench:body"


@dataclass(frozen=True)
class Stat:
    """What ``/proc/PID/stat`` tells about one process."""

    parent: int
    group: int
    cpu: float  # seconds, user + system, with its children that were waited for


def parse_stat(text: str) -> Stat:
    """A :class:`Stat` from the text of ``/proc/PID/stat``.

    The command name (field 2) is in brackets and may hold spaces or brackets,
    so the fields are counted from its closing bracket."""
    rest = text[text.rindex(")") + 2 :].split()
    # rest[0] is field 3 (state): ppid is field 4, pgrp 5, utime..cstime 14 to 17
    ticks = sum(int(v) for v in rest[11:15])
    return Stat(int(rest[1]), int(rest[2]), ticks / TICKS)


def _stat(pid: int) -> Stat | None:
    try:
        return parse_stat((PROC / str(pid) / "stat").read_text())
    except (OSError, ValueError, IndexError):  # gone in between, or not a process
        return None


def process_cpu(pid: int) -> float:
    """CPU seconds of one process (all its threads) and its waited-for children."""
    found = _stat(pid)
    return found.cpu if found else 0.0


def members(stats: dict[int, Stat], groups: frozenset[int], known: set[int]) -> set[int]:
    """The pids of ``stats`` in one of ``groups``, or descended from such a process
    or from one of ``known`` (members found earlier)."""
    found = {pid for pid, st in stats.items() if st.group in groups or pid in known}
    grown = True
    while grown:
        more = {pid for pid, st in stats.items() if st.parent in found or st.parent in known}
        grown = bool(more - found)
        found |= more
    return found


@dataclass
class GroupCPU:
    """CPU seconds of every process in one of ``groups`` or descended from one.

    Scans ``/proc``; a process found outside is not read again (a measurement
    lasts seconds, far too short for its pid to be reused, and a process does
    not change parents except to be handed to init)."""

    groups: frozenset[int]
    _members: set[int] = field(default_factory=set)
    _others: set[int] = field(default_factory=set)

    def seconds(self) -> float:
        stats: dict[int, Stat] = {}
        for entry in os.listdir(PROC):
            pid = int(entry) if entry.isdigit() else 0
            if pid and pid not in self._others and (found := _stat(pid)) is not None:
                stats[pid] = found
        inside = members(stats, self.groups, self._members)
        self._members |= inside
        self._others |= stats.keys() - inside
        return sum(stats[pid].cpu for pid in inside)


@dataclass(frozen=True)
class Reading:
    """One moment: CPU seconds so far, commands served so far, body round trips so far."""

    workers: float
    server: float
    commands: dict[str, int]
    bodies: int


def calls(stats: dict[str, dict[str, int]]) -> dict[str, int]:
    """Calls per command from ``INFO commandstats`` (``client|setname`` style names
    for subcommands)."""
    return {name.removeprefix("cmdstat_"): int(v["calls"]) for name, v in stats.items()}


class Meter:
    """Readings of the worker process groups ``groups`` and of the redis-server
    behind ``server``."""

    def __init__(self, server: redis.Redis, groups: Iterable[int]) -> None:
        self.server = server
        self.server_pid = int(server.info("server")["process_id"])
        self.group = GroupCPU(frozenset(groups))

    def read(self) -> Reading:
        """A reading now. Costs the server one ``INFO`` and one ``GET``, which
        :func:`per_job` leaves out."""
        pipe = self.server.pipeline(transaction=False)
        pipe.get(BODY)
        pipe.info("commandstats")
        bodies, stats = pipe.execute()
        return Reading(
            self.group.seconds(), process_cpu(self.server_pid), calls(stats), int(bodies or 0)
        )


#: Commands each reading sends itself (see :meth:`Meter.read`): not the system's.
OWN = {"info": 1, "get": 1}


def command_delta(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    """Calls per command between two readings, less the later reading's own commands
    (a command is counted once it has run, so a reading does not see its own)."""
    delta = {name: n - before.get(name, 0) - OWN.get(name, 0) for name, n in after.items()}
    return {name: n for name, n in delta.items() if n > 0}


def per_job(before: Reading, after: Reading, jobs: int, prefix: str) -> dict[str, float]:
    """What the stretch between two readings cost per job, as figures named
    ``PREFIX_cpu_workers_us``, ``PREFIX_cpu_server_us``, ``PREFIX_cpu_us`` (their
    sum), ``PREFIX_commands`` and ``PREFIX_cmd:NAME`` (calls per job of each command)."""
    if jobs <= 0:
        return {}
    workers = (after.workers - before.workers) * 1e6 / jobs
    server = (after.server - before.server) * 1e6 / jobs
    served = command_delta(before.commands, after.commands)
    figures = {
        f"{prefix}_cpu_workers_us": workers,
        f"{prefix}_cpu_server_us": server,
        f"{prefix}_cpu_us": workers + server,
        f"{prefix}_commands": sum(served.values()) / jobs,
    }
    figures |= {f"{prefix}_cmd:{name}": n / jobs for name, n in served.items()}
    return figures


def top_commands(figures: dict[str, float], prefix: str, n: int = 3) -> list[tuple[str, float]]:
    """The ``n`` commands with the most calls per job among ``PREFIX_cmd:NAME`` figures."""
    marker = f"{prefix}_cmd:"
    found = [(k.removeprefix(marker), v) for k, v in figures.items() if k.startswith(marker)]
    return sorted(found, key=lambda item: (-item[1], item[0]))[:n]
