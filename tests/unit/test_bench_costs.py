"""The arithmetic of ``bench/redis_peers/costs.py``: reading ``/proc/PID/stat``
lines, finding a worker's processes, and turning two readings into figures
per job. (Real processes and a real Redis: tests/integration/test_bench_costs.py.)"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

PATH = Path(__file__).resolve().parents[2] / "bench" / "redis_peers" / "costs.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_costs", PATH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


costs = _load()


def _line(pid: int, name: str, ppid: int, pgrp: int, times: tuple[int, int, int, int]) -> str:
    """A /proc/PID/stat line: fields 1-2, then 3 (state) to 17 (cstime) and a few more."""
    fields = ["S", ppid, pgrp, pgrp, 0, -1, 4194304, 0, 0, 0, 0, *times, 20, 0, 1, 0]
    return f"{pid} ({name}) " + " ".join(str(f) for f in fields)


def test_a_stat_line_gives_parent_group_and_cpu_with_waited_for_children() -> None:
    ticks = costs.TICKS
    stat = costs.parse_stat(_line(40, "python3", 7, 40, (2 * ticks, ticks, ticks // 2, 0)))

    assert (stat.parent, stat.group) == (7, 40)
    assert stat.cpu == pytest.approx(3.5)


def test_a_command_name_with_spaces_and_brackets_does_not_shift_the_fields() -> None:
    ticks = costs.TICKS
    stat = costs.parse_stat(_line(41, "a (b) c)", 9, 12, (ticks, 0, 0, ticks)))

    assert (stat.parent, stat.group, stat.cpu) == (9, 12, pytest.approx(2.0))


def _stat(parent: int, group: int) -> object:
    return costs.Stat(parent, group, 1.0)


def test_members_are_the_groups_and_everything_descended_from_them() -> None:
    stats = {
        100: _stat(1, 100),  # the worker, leader of its group
        101: _stat(100, 100),  # a child in the same group
        102: _stat(100, 102),  # a child in a session of its own
        103: _stat(102, 102),  # its child
        104: _stat(103, 104),  # and a grandchild in yet another session
        200: _stat(1, 200),  # an unrelated process
        201: _stat(200, 200),
    }

    assert costs.members(stats, frozenset({100}), set()) == {100, 101, 102, 103, 104}


def test_a_child_of_a_member_found_earlier_is_a_member() -> None:
    """The parent may not be in this scan's stats (it exited) but was a member before."""
    stats = {300: _stat(250, 300), 301: _stat(1, 301)}

    assert costs.members(stats, frozenset({100}), {250}) == {300}


def _reading(workers: float, server: float, commands: dict[str, int], bodies: int) -> object:
    return costs.Reading(workers, server, commands, bodies)


def test_figures_per_job_leave_out_the_readings_own_commands() -> None:
    before = _reading(1.0, 0.5, {"info": 3, "get": 3, "brpop": 10}, 0)
    after = _reading(1.2, 0.6, {"info": 4, "get": 4, "brpop": 110, "incr": 100, "hset": 200}, 100)

    figures = costs.per_job(before, after, 100, "noop")

    assert figures["noop_cpu_workers_us"] == pytest.approx(2000)
    assert figures["noop_cpu_server_us"] == pytest.approx(1000)
    assert figures["noop_cpu_us"] == pytest.approx(3000)
    assert figures["noop_commands"] == pytest.approx(4.0)  # brpop, incr, hset x2
    assert figures["noop_cmd:hset"] == pytest.approx(2.0)
    assert "noop_cmd:info" not in figures and "noop_cmd:get" not in figures
    top = costs.top_commands(figures, "noop", 2)
    assert top == [("hset", pytest.approx(2.0)), ("brpop", pytest.approx(1.0))]


def test_no_jobs_give_no_figures() -> None:
    reading = _reading(1.0, 1.0, {}, 0)

    assert costs.per_job(reading, reading, 0, "io") == {}
