"""The benchmark commands the docs show run, at a small size.

The docs' own runs take minutes to hours (a million jobs, several runs); here
each documented command runs once on a few hundred jobs, so a benchmark that
no longer starts or no longer prints its figures fails in CI.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from doc_blocks import ROOT

from backends import IN_CI, MYSQL_URL, POSTGRES_URL, REDIS_URL, drop_store, store_url
from integration.redis_servers import PrivateRedis, private_redis

__all__ = ["private_redis"]  # a fixture

# (documented command, the figure its output must show); {sqlite}, {redis},
# {mysql} and {postgres} name a fresh SQLite file, the test Redis, MySQL and
# PostgreSQL servers
# (each benchmark run makes and removes a namespace or database of its own).
COMMANDS = [
    ("bench/bench.py --url {sqlite} --jobs 200 --samples 20 --runs 1", "drain_per_s"),
    (
        "bench/bench.py --url {redis} --jobs 200 --samples 20 --runs 1 --concurrency 32",
        "server_cpu_us_per_job",
    ),
    ("bench/bench.py --url {mysql} --jobs 200 --samples 20 --runs 1 --concurrency 64", "p50_ms"),
    (
        "bench/bench.py --url {redis} --jobs 200 --samples 20 --runs 1 --body roundtrip",
        "roundtrip jobs",
    ),
    (
        "bench/bench.py --url {sqlite} --jobs 100 --samples 10 --runs 1 --body compute "
        "--processes 1,2",
        "compute jobs, --processes 2",
    ),
    (
        "bench/bench.py --url {sqlite} --jobs 200 --samples 10 --runs 1 --mode processes "
        "--concurrency 2 --prefetch 0,2",
        "--prefetch 2",
    ),
    ("bench/dashboard_pages.py --jobs 2000 --db {db} --finish 200 --repeat 1", "/metrics"),
    ("bench/queue_listing.py --url {sqlite} --jobs 2000 --repeat 1", "queue=old&task"),
    ("bench/idle_cost.py --url {sqlite} --settle 0.5 --window 0.5 --windows 1", "idle worker"),
    (
        "bench/soak.py --url {redis} --minutes 0.1 --every 1 --warmup 0 --rate 50",
        "in the second",
    ),
    ("bench/limits_bench.py claims --url {sqlite} --jobs 200 --runs 1", "empty claim ms"),
    (
        "bench/limits_bench.py key --url {sqlite} --jobs 60 --sleep 0.005 --workers 2 --runs 1",
        "key's slots in use",
    ),
    (
        "bench/limits_bench.py unique --url {redis} --urls 1000 --batch-send 500 --runs 1",
        "send dup/s",
    ),
    (
        "bench/seen_set.py --url {redis} --urls 20000 --probe 2000 --exact 1000",
        "unique key bytes/URL",
    ),
    (  # starts a redis-server and a site of its own
        "bench/crawl_peers/peers.py --systems rota --hosts 2 --pages 30 --runs 1",
        "pages/s, crawl",
    ),
    (  # starts a redis-server of its own
        "bench/backlog.py --stores redis,sqlite --sizes 100,1000 --jobs 200 --runs 1",
        "bytes/queued job",
    ),
    (  # every size's store filled first, then drained in turns
        "bench/backlog.py --stores redis,sqlite --sizes 100,1000 --jobs 200 --runs 2 --paired",
        "store CPU per job",
    ),
    (
        "bench/backlog.py --stores sqlite --backlog scheduled --sizes 0,1000 --jobs 200 --runs 1",
        "scheduled backlog",
    ),
    ("bench/redis_peers/script_cost.py --url {redis} --jobs 200", "µs of server time per job"),
    (
        "bench/redis_peers/script_cost.py --url {redis} --jobs 200 --sends 20",
        "µs of server time per job (one at a time, handed off)",
    ),
    ("bench/txsend.py --url {postgres} --sends 50 --runs 1", "CPU us per send"),
    ("bench/txsend.py --url {mysql} --sends 50 --runs 1", "CPU us per send"),
]


@pytest.mark.parametrize(("command", "figure"), COMMANDS, ids=[c for c, _ in COMMANDS])
def test_benchmark_runs_small(command: str, figure: str, tmp_path: Path) -> None:
    # fail in CI, skip locally, when the server is missing
    if "{redis}" in command:
        store_url("redis", tmp_path)
    if "{postgres}" in command:
        store_url("postgres", tmp_path)
    if "{mysql}" in command:
        drop_store("mysql", store_url("mysql", tmp_path))  # the benchmark makes its own
    args = command.format(
        sqlite=f"sqlite:///{tmp_path / 'bench.db'}",
        db=tmp_path / "pages.db",
        redis=REDIS_URL,
        mysql=f"{MYSQL_URL}/rota_bench",
        postgres=POSTGRES_URL,
    ).split()
    done = subprocess.run(
        [sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert figure in done.stdout, done.stdout


def test_script_cost_counts_instructions_under_callgrind(
    private_redis: type[PrivateRedis], tmp_path: Path
) -> None:
    if shutil.which("valgrind") is None:
        if IN_CI:
            pytest.fail("valgrind is not installed (CI=true: must not skip)")
        pytest.skip("valgrind is not installed")
    out = tmp_path / "out"
    server = private_redis(launcher=("valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"))
    assert server.proc is not None
    done = subprocess.run(
        [
            sys.executable,
            "bench/redis_peers/script_cost.py",
            "--url",
            f"redis://{server.address}/0",
            "--jobs",
            "100",
            "--sends",
            "10",
            "--callgrind",
            str(server.proc.pid),  # valgrind runs the server in its own process
            str(out),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    claim, finish, send = (
        float(line.split()[1].replace(",", "")) for line in done.stdout.splitlines()
    )
    assert claim > 1000 and finish > 1000 and send > 1000, done.stdout  # thousands per job
