"""What the Redis peers benchmark says a job costs, on real processes and a real Redis:
``bench/redis_peers/costs.py`` finds every process of a worker (children in
sessions of their own and children that ended included) and counts the
commands a private redis-server ran; ``peers.py`` reports both for rota at
its default settings with one process per CPU."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import pytest

from backends import IN_CI
from helpers import wait_for
from integration.redis_servers import PrivateRedis, private_redis
from procs import Processes

__all__ = ["private_redis"]  # a fixture of this module's tests

PEERS = Path(__file__).resolve().parents[2] / "bench" / "redis_peers"
BURN = 0.3  # CPU seconds each burner spends


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_costs_real", PEERS / "costs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


costs = _load()

# Burns BURN s of CPU, then creates the file argv[1] (if given) and waits for
# its stdin to close (its parent's death) before it exits.
BURNER = f"""
import sys, time
start = time.process_time()
while time.process_time() - start < {BURN}:
    pass
if len(sys.argv) > 1:
    open(sys.argv[1], "w").close()
    sys.stdin.read()
"""

# A worker-like leader: one burner it waits for (its time lands in the
# leader's cutime), then one in a session of its own that stays alive.
LEADER = """
import subprocess, sys
burner, marker = sys.argv[1], sys.argv[2]
subprocess.run([sys.executable, "-I", "-S", "-c", burner], check=True)
child = subprocess.Popen(
    [sys.executable, "-I", "-S", "-c", burner, marker],
    stdin=subprocess.PIPE, start_new_session=True,
)
child.wait()
"""


def test_a_workers_cpu_counts_children_in_own_sessions_and_ended_ones(
    processes: Processes, tmp_path: Path
) -> None:
    marker = tmp_path / "burnt"
    leader = processes.command(sys.executable, "-I", "-S", "-c", LEADER, BURNER, str(marker))
    group = costs.GroupCPU(frozenset({leader.pid}))
    before = group.seconds()

    wait_for(marker.exists, timeout=60, what="both burners to burn their CPU time")
    spent = group.seconds() - before

    # two burners, plus three small interpreter starts; counting the ended
    # burner twice (its own time and its parent's cutime) would pass 3 x BURN
    assert 2 * BURN - 0.05 <= spent < 2.8 * BURN
    assert leader.poll() is None


def test_a_reading_counts_the_commands_a_private_redis_ran(
    private_redis: type[PrivateRedis],
) -> None:
    import redis

    server = private_redis()
    client = redis.Redis(port=server.port)
    meter = costs.Meter(client, [])
    before = meter.read()
    for _ in range(5):
        pipe = client.pipeline(transaction=False)
        pipe.execute_command("INCR", costs.BODY)
        pipe.hset("h", "f", 1)
        pipe.execute()
    after = meter.read()
    client.close()

    figures = costs.per_job(before, after, after.bodies - before.bodies, "x")

    assert after.bodies - before.bodies == 5
    assert figures["x_commands"] == pytest.approx(2.0)
    assert figures["x_cmd:incr"] == pytest.approx(1.0)
    assert figures["x_cmd:hset"] == pytest.approx(1.0)
    assert figures["x_cpu_server_us"] >= 0
    assert server.proc is not None and meter.server_pid == server.proc.pid


@pytest.fixture
def bench(tmp_path: Path) -> Iterator[Callable[..., subprocess.Popen[bytes]]]:
    """``bench(*args)`` starts ``peers.py ARGS``; at teardown each still running gets
    SIGTERM (on which it stops its own children), then SIGKILL."""
    if shutil.which("redis-server") is None:
        if IN_CI:
            pytest.fail("redis-server is not installed (CI=true: must not skip)")
        pytest.skip("redis-server is not installed")
    started: list[subprocess.Popen[bytes]] = []

    def run(*args: str) -> subprocess.Popen[bytes]:
        log = (tmp_path / f"peers-{len(started)}.log").open("wb")
        argv = [sys.executable, str(PEERS / "peers.py"), *args]
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        started.append(proc)
        return proc

    yield run
    for proc in started:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)


def test_peers_reports_rotas_costs_at_default_settings(
    bench: Callable[..., subprocess.Popen[bytes]], tmp_path: Path
) -> None:
    out = tmp_path / "peers.json"
    args = ["--systems", "rota", "--profile", "defaults", "--body", "roundtrip"]
    args += ["--workloads", "noop,latency", "--jobs", "1000", "--samples", "20", "--runs", "1"]
    proc = bench(*args, "--json", str(out))

    assert proc.wait(180) == 0, (tmp_path / "peers-0.log").read_text()
    printed = (tmp_path / "peers-0.log").read_text()
    found = json.loads(out.read_text())["defaults"]["rota"]
    (figures,) = found["runs"]
    assert found["errors"] == []
    assert "--processes" in found["settings"]["noop"]
    # the jobs ran in the supervisor's children, in sessions of their own
    assert figures["noop_cpu_workers_us"] > 20
    # (the server's share may round to nothing: /proc counts 10 ms ticks)
    total = figures["noop_cpu_workers_us"] + figures["noop_cpu_server_us"]
    assert figures["noop_cpu_us"] == pytest.approx(total)
    # every body's INCR, and at least one command to take the job
    assert figures["noop_cmd:incr"] >= 1.0
    assert figures["noop_commands"] >= 2.0
    assert figures["latency_commands"] > 0
    assert "CPU µs/job, workers + redis-server" in printed
    assert "### Default settings, one worker process per CPU" in printed
