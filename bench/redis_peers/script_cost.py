"""What the claim, finish and enqueue scripts cost the Redis server per job.

Sends N no-op jobs, then claims them all BATCH at a time and finishes them
BATCH at a time, through the store protocol in one process (with
``--running R``, claims and finishes in turns, at most R jobs running, as a
worker does: the index of leases then holds about R entries); then, with
``--sends S``, registers a worker as idle (as a waiting worker does) and
sends S jobs one at a time, each handed straight to it (the latency path).
Prints the server's time per job of each script from ``SLOWLOG`` (every
call logged while it runs; the median call divided by BATCH, or by one for
a send). With ``--callgrind``, the server is a ``redis-server`` run under
``valgrind --tool=callgrind`` and the script prints the instructions the
server ran per job in each phase instead: a count that does not drift
with the machine's speed, so two versions of the scripts compare in one
run each.

    valgrind --tool=callgrind --callgrind-out-file=/tmp/cg/out \\
        redis-server --port 6390 --save '' --appendonly no &
    .venv/bin/python bench/redis_peers/script_cost.py \\
        --url redis://127.0.0.1:6390/0 --callgrind $! /tmp/cg/out
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import orjson
import redis

from rota.models import ClaimedJob, NewJob, Outcome, WorkerInfo
from rota.stores import open_store
from rota.stores.redis.store import RedisStore

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # bench/
from _stores import drop, fresh_url

#: The worker the measured claims are made for.
WORKER = "bench-worker"
#: The waiting worker the measured sends are handed to.
IDLE_WORKER = "bench-idle-worker"


def instructions(pid: str, out_file: str) -> Callable[[], int]:
    """A reading of the instructions a callgrind-run server (valgrind's
    ``pid``) ran since the previous reading: each reading dumps the profile
    (``OUT_FILE.N``) and zeroes it."""
    path = Path(out_file)

    def reading() -> int:
        before = set(path.parent.glob(f"{path.name}.*"))
        subprocess.run(["callgrind_control", "-d", pid], check=True, capture_output=True)
        (dump,) = set(path.parent.glob(f"{path.name}.*")) - before
        for line in dump.read_text().splitlines():
            if line.startswith(("summary:", "totals:")):
                return int(line.split()[1])
        raise SystemExit(f"{dump}: no totals")

    return reading


def finish(store: RedisStore, done: list[ClaimedJob]) -> None:
    store.finish([Outcome(c.id, c.token, ok=True, result=b"null") for c in done])


def run_phases(
    store: RedisStore,
    jobs: int,
    batch: int,
    running: int,
    sends: int,
    payload: bytes,
    read: Callable[[], int] | None,
) -> dict[str, float]:
    """Claim and finish the ``jobs`` queued, ``batch`` at a time (all claims
    first, or with ``running``, at most that many jobs running at a time),
    then send ``sends`` jobs one at a time to a waiting worker; with
    ``read``, the instructions per job of each phase."""
    spent: dict[str, float] = {}
    if running:
        spent |= claim_and_finish_in_turns(store, jobs, batch, running, read)
    else:
        claimed: list[ClaimedJob] = []
        while len(claimed) < jobs:
            claimed += store.claim(WORKER, ["bench"], batch)
        if read:
            spent["claim"] = read() / jobs
        for first in range(0, jobs, batch):
            finish(store, claimed[first : first + batch])
        if read:
            spent["finish"] = read() / jobs
    if sends:
        # a waiting worker's idle registration, with a slot for every send
        store._claim(IDLE_WORKER, ["bench"], sends, 3600.0)
        for _ in range(sends):
            store.enqueue([NewJob(uuid.uuid4().hex, "noop", "bench", payload)])
        if read:
            spent["enqueue"] = read() / sends
    return spent


def claim_and_finish_in_turns(
    store: RedisStore, jobs: int, batch: int, running: int, read: Callable[[], int] | None
) -> dict[str, float]:
    """Claims of ``batch`` jobs, each after the oldest ``batch`` of the jobs
    running were finished once more than ``running`` - ``batch`` run, as a
    worker with that many jobs in flight does: the index of leases then
    holds about ``running`` entries. With ``read``, the instructions per job
    of the claims and of the finishes."""
    spent = {"claim": 0, "finish": 0}
    held: list[ClaimedJob] = []
    claimed = 0
    while claimed < jobs or held:
        if held and (len(held) > running - batch or claimed >= jobs):
            finish(store, held[:batch])
            del held[:batch]
            if read:
                spent["finish"] += read()
        else:
            got = store.claim(WORKER, ["bench"], batch)
            held += got
            claimed += len(got)
            if read:
                spent["claim"] += read()
    return {name: total / jobs for name, total in spent.items()}


def server_time(client: redis.Redis, per_call: dict[str, int]) -> dict[str, float]:
    """Per script of ``per_call`` that ran, the server's median time per call
    from ``SLOWLOG``, divided by the jobs a call handles."""
    calls: dict[str, list[int]] = {}
    for entry in client.slowlog_get(100_000):
        words = entry["command"].split()
        if words and words[0].upper() == b"FCALL":
            script = words[1].decode().rsplit("_", 1)[-1]
            calls.setdefault(script, []).append(entry["duration"])
    return {
        name: statistics.median(calls[name]) / n for name, n in per_call.items() if name in calls
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument(
        "--running",
        type=int,
        default=0,
        help="at most this many jobs running at a time (default: claim all, then finish)",
    )
    parser.add_argument("--sends", type=int, default=0, help="jobs sent one at a time")
    parser.add_argument(
        "--callgrind",
        nargs=2,
        metavar=("PID", "OUT_FILE"),
        help="valgrind's process and the server's --callgrind-out-file",
    )
    args = parser.parse_args()
    url = fresh_url(args.url)
    store = open_store(url)
    if not isinstance(store, RedisStore):
        raise SystemExit(f"{args.url}: script_cost.py measures a Redis store")
    client = redis.Redis.from_url(args.url)
    slowlog = client.config_get("slowlog-*")  # put back as found
    payload = orjson.dumps({"args": [], "kwargs": {}})
    try:
        for first in range(0, args.jobs, 1000):
            count = min(1000, args.jobs - first)
            store.enqueue(
                [NewJob(uuid.uuid4().hex, "noop", "bench", payload) for _ in range(count)]
            )
        # a worker's record, as a running worker keeps it: finish names its host
        store.heartbeat(
            WorkerInfo(
                id=WORKER,
                host="bench-host",
                pid=os.getpid(),
                queues=("bench",),
                concurrency=8,
                mode="threads",
                running=0,
                started_at=time.time(),
            )
        )
        read = instructions(*args.callgrind) if args.callgrind else None
        if read:
            read()
        else:
            client.config_set("slowlog-max-len", 100_000)
            client.config_set("slowlog-log-slower-than", 0)
            client.slowlog_reset()
        counts = run_phases(store, args.jobs, args.batch, args.running, args.sends, payload, read)
        if read:
            spent, unit = counts, "instructions"
        else:
            per_call = {"claim": args.batch, "finish": args.batch, "enqueue": 1}
            spent, unit = server_time(client, per_call), "µs of server time"
        for name in ("claim", "finish"):
            at_most = f", at most {args.running} running" if args.running else ""
            print(f"{name}: {spent[name]:,.2f} {unit} per job (batches of {args.batch}{at_most})")
        if args.sends:
            print(f"enqueue: {spent['enqueue']:,.2f} {unit} per job (one at a time, handed off)")
    finally:
        client.config_set("slowlog-log-slower-than", slowlog["slowlog-log-slower-than"])
        client.config_set("slowlog-max-len", slowlog["slowlog-max-len"])
        client.close()
        store.close()
        drop(url)


if __name__ == "__main__":
    main()
