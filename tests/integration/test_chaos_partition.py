"""A real worker cut off from its Redis store by a network partition, healed later.

The store is a ``redis-server`` of this test's own, bound to one end of a veth
pair; the worker under test runs in a network namespace holding the other
end. Taking that end down cuts the worker off (its packets have no route);
bringing it up heals the partition. Another worker, outside the namespace,
keeps reaching the store throughout.

While cut, the held jobs finish on the cut-off worker, whose outcomes cannot
reach the store; their leases expire and the other worker recovers them
(a lost attempt each) and runs them again. After healing, the cut-off
worker's stale finishes are refused, nothing is lost, every recorded result
is the one of the attempt that held the lease, and the cut-off worker goes on
serving.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from backends import IN_CI
from helpers import appended_lines, wait_for
from procs import ROTA, Processes
from rota import App
from rota.errors import RotaError
from rota.models import Job, JobState
from rota.stores import Store, open_store

LEASE = 2.0
HELD = 4  # jobs running on the cut-off worker when the cut comes
BULK = 200  # jobs the other worker runs meanwhile
AFTER = 20  # jobs sent after healing, for the cut-off worker alone

_REFUSED = re.compile(r"result of job (\S+) refused")


def _require(*commands: str) -> None:
    missing = [c for c in commands if shutil.which(c) is None]
    reason = ""
    if os.geteuid() != 0:
        reason = "network namespaces need root"
    elif missing:
        reason = f"missing commands: {', '.join(missing)} (install iproute2 and redis-server)"
    if reason:
        if IN_CI:
            pytest.fail(f"{reason} (CI=true: must not skip)")
        pytest.skip(reason)


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=10)


@dataclass(frozen=True)
class Link:
    """A veth pair between the root namespace (the store's end) and ``namespace``."""

    namespace: str
    outside: str
    inside: str
    store_address: str

    @property
    def enter(self) -> list[str]:
        """The command prefix that runs a program inside the namespace."""
        return ["ip", "netns", "exec", self.namespace]

    def cut(self) -> None:
        """Take the namespace's end down: its packets to the store have no route."""
        _ip("-n", self.namespace, "link", "set", self.inside, "down")

    def heal(self) -> None:
        """Bring the namespace's end back up (its route returns with it)."""
        _ip("-n", self.namespace, "link", "set", self.inside, "up")


@pytest.fixture
def link() -> Iterator[Link]:
    """A fresh namespace and veth pair on a random private /30; always deleted."""
    _require("ip", "redis-server")
    suffix = secrets.token_hex(3)
    namespace, outside, inside = f"rota-chaos-{suffix}", f"rc{suffix}o", f"rc{suffix}i"
    base = f"10.231.{secrets.randbelow(256)}"
    first = 4 * secrets.randbelow(64)
    store_address, worker_address = f"{base}.{first + 1}", f"{base}.{first + 2}"
    try:
        _ip("netns", "add", namespace)
        _ip("link", "add", outside, "type", "veth", "peer", "name", inside, "netns", namespace)
        _ip("addr", "add", f"{store_address}/30", "dev", outside)
        _ip("link", "set", outside, "up")
        _ip("-n", namespace, "addr", "add", f"{worker_address}/30", "dev", inside)
        _ip("-n", namespace, "link", "set", inside, "up")
        yield Link(namespace, outside, inside, store_address)
    finally:
        for command in (["netns", "del", namespace], ["link", "del", outside]):
            subprocess.run(["ip", *command], capture_output=True, timeout=10)


def _free_port(address: str) -> int:
    with socket.socket() as probe:
        probe.bind((address, 0))
        return int(probe.getsockname()[1])


def _answers(url: str) -> bool:
    try:
        store = open_store(url + "&retry_for=0")
        try:
            store.now()
        finally:
            store.close()
    except RotaError:
        return False
    return True


@pytest.fixture
def redis_url(link: Link, tmp_path: Path) -> Iterator[str]:
    """A store URL on a ``redis-server`` bound to the veth's root end; stopped after."""
    port = _free_port(link.store_address)
    # Loopback-only in effect: the address exists on this host's veth pair alone.
    command = ["redis-server", "--bind", link.store_address, "--port", str(port)]
    command += ["--save", "", "--appendonly", "no", "--protected-mode", "no"]
    with open(tmp_path / "redis.log", "wb") as out:
        server = subprocess.Popen(
            [*command, "--dir", str(tmp_path)],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    url = f"redis://{link.store_address}:{port}/0?namespace=chaos"
    try:
        wait_for(lambda: _answers(url), timeout=15, interval=0.05, what="redis-server")
        yield url
    finally:
        server.kill()
        server.wait(10)


@pytest.fixture
def workers(link: Link, redis_url: str, tmp_path: Path) -> Iterator[Processes]:
    """Worker processes, stopped before the store and the namespace go."""
    procs = Processes(tmp_path)
    yield procs
    procs.stop_all()


def start_inside(
    procs: Processes, link: Link, args: Sequence[str], env: dict[str, str]
) -> subprocess.Popen[bytes]:
    """Start ``rota ARGS...`` inside the namespace, logged and stopped like the others."""
    with open(procs.tmp_path / f"proc-{len(procs.started)}.log", "wb") as out:
        proc = subprocess.Popen(
            [*link.enter, ROTA, *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=os.environ | env,
            start_new_session=True,
        )
    procs.started.append(proc)
    return proc


def runs_by(log: Path) -> list[tuple[str, int, int]]:
    """(job id, attempt, pid) of every finished execution, in order."""
    return [
        (job_id, int(attempt), int(pid))
        for job_id, attempt, pid in (line.split() for line in appended_lines(log))
    ]


def jobs_of(store: Store, ids: Sequence[str]) -> list[Job]:
    found = [store.get_job(job_id) for job_id in ids]
    assert all(job is not None for job in found)
    return [job for job in found if job is not None]


def all_succeeded(store: Store, ids: Sequence[str]) -> Callable[[], bool]:
    return lambda: all(job.state is JobState.SUCCEEDED for job in jobs_of(store, ids))


def test_partitioned_worker_is_fenced_and_loses_nothing(
    link: Link,
    redis_url: str,
    workers: Processes,
    app_path: Callable[[str], str],
    tmp_path: Path,
) -> None:
    log, gate = tmp_path / "runs.log", tmp_path / "gate"
    env = {"ROTA_TEST_LOG": str(log), "ROTA_TEST_GATE": str(gate), "ROTA_TEST_LEASE": str(LEASE)}
    worker_args = ["worker", app_path("chaos"), "--url", redis_url, "--grace", "5"]
    sender = App(redis_url, lease=LEASE)  # a job's lease is fixed when it is sent
    step = sender.task(name="step")(lambda i, hold=False: None)
    store = sender.store

    held = [h.id for h in step.send_many([{"i": i, "hold": True} for i in range(HELD)])]
    cut_off = start_inside(workers, link, [*worker_args, "--concurrency", str(HELD)], env)

    def held_by_cut_off() -> bool:
        return all(
            job.state is JobState.RUNNING and f"-{cut_off.pid}-" in (job.worker or "")
            for job in jobs_of(store, held)
        )

    wait_for(held_by_cut_off, timeout=30, interval=0.05, what="the cut-off worker holds its jobs")
    bulk = [h.id for h in step.send_many([{"i": HELD + i} for i in range(BULK)])]

    link.cut()
    cut_at = time.monotonic()
    gate.touch()  # the held jobs finish into the cut
    wait_for(
        lambda: sum(pid == cut_off.pid for _, _, pid in runs_by(log)) == HELD,
        timeout=30,
        what="the held jobs finished on the cut-off worker",
    )
    other = workers.rota(*worker_args, "--concurrency", "4", env=env)
    wait_for(all_succeeded(store, held + bulk), timeout=60, interval=0.1, what="recovery")
    link.heal()
    cut_seconds = time.monotonic() - cut_at

    def refused() -> set[str]:
        return set(_REFUSED.findall(workers.output(cut_off)))

    wait_for(lambda: refused() == set(held), timeout=60, interval=0.1, what="stale finishes")
    os.killpg(other.pid, signal.SIGTERM)
    assert other.wait(30) == 0
    after = [h.id for h in step.send_many([{"i": HELD + BULK + i} for i in range(AFTER)])]
    wait_for(all_succeeded(store, after), timeout=60, interval=0.1, what="the healed worker")
    assert cut_off.poll() is None, workers.output(cut_off)

    ids = held + bulk + after
    jobs = {job.id: job for job in jobs_of(store, ids)}
    runs = runs_by(log)
    executions = Counter(job_id for job_id, _, _ in runs)
    figures = {
        "jobs": len(ids),
        "cuts": 1,
        "lease_s": LEASE,
        "cut_s": round(cut_seconds, 1),
        "lost_attempts_recorded": sum(job.lost for job in jobs.values()),
        "executions": len(runs),
        "duplicate_executions": sum(n - 1 for n in executions.values()),
        "stale_finishes_refused": len(refused()),
        "succeeded": sum(job.state is JobState.SUCCEEDED for job in jobs.values()),
    }
    print("partition figures:", json.dumps(figures))
    (tmp_path / "chaos-partition.json").write_text(json.dumps(figures))

    assert cut_seconds > LEASE, "the partition outlasted a lease"
    # Nothing lost; every recorded result is that of the attempt holding the lease.
    assert figures["succeeded"] == len(ids) and set(executions) == set(ids)
    for job in jobs.values():
        assert job.result["attempt"] == job.attempt, job
    # The held jobs: one lost attempt on the cut-off worker, then run again by the other.
    for job_id in held:
        job = jobs[job_id]
        assert (job.attempt, job.lost, executions[job_id]) == (2, 1, 2), job
        assert [(h["event"], h["attempt"]) for h in job.history] == [("lost", 1), ("succeeded", 2)]
        assert f"-{cut_off.pid}-" in job.history[0]["worker"]
        assert job.result["pid"] == other.pid
    # Nothing else was lost or run twice, and the healed worker served alone.
    assert figures["lost_attempts_recorded"] == HELD
    assert figures["duplicate_executions"] == HELD
    assert {pid for job_id, _, pid in runs if job_id in after} == {cut_off.pid}
    assert jobs[after[0]].attempt == 1 and jobs[after[0]].lost == 0
    sender.close()
