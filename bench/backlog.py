"""What a store's backlog costs: claim rate and bytes per queued job as the
number of queued jobs grows.

For each backlog size N (default 1,000, 100,000 and 1,000,000) and each
store, a fresh store is filled with N + M queued no-op jobs (``enqueue``,
5,000 per call, the store's bulk send), then one process drains M of them
(default 20,000) through the store protocol: ``claim`` of 16 (``--batch``),
then one ``finish`` of the claimed batch. The backlog is sent first, so the drained
jobs come from a queue that holds N to N + M jobs while they run. The drain
runs ``--runs`` times (M more jobs sent, untimed, before each later run);
the median rate is reported with every run's, and the median time per job
spent in claim calls and in finish calls (round trips included), and the
store's CPU per job over the drain (the redis-server's, from ``INFO cpu``;
for SQLite, which runs in the benchmark's process, that process's), which a
busy shared machine disturbs less than the rate.

Bytes per queued job, after the filling: on Redis, the growth of
``INFO memory`` ``used_memory`` / (N + M), without the replay copies of
batch replies (``req:`` keys, which expire after a minute), and the mean
``MEMORY USAGE`` of a sample of keys of each kind; on SQLite, the growth of
the database file and its WAL / (N + M).

Redis runs on a private ``redis-server`` (no persistence) on a free port,
started per backlog size, so a shared server is neither filled nor measured;
SQLite on a fresh file in a temporary folder::

    python bench/backlog.py --stores redis,sqlite
    python bench/backlog.py --stores redis --sizes 1000,100000 --jobs 5000 --runs 1
    python bench/backlog.py --backlog scheduled --sizes 0,20000,200000

With ``--backlog scheduled`` the N jobs of the backlog are scheduled an hour
ahead in the same queue (retries waiting out their backoff, ``send_in``)
instead of queued: what jobs due later cost the claims of the ones due now.

With ``--paired`` every size's store is filled first, then the sizes are
drained in rounds, one drain per size per round (the order reversed every
other round), and each size is compared with the first round by round
(the median of the rounds' ratios): on a machine whose speed drifts, sizes
drained minutes apart differ by more than the backlog makes them::

    python bench/backlog.py --stores redis,sqlite --sizes 1000,1000000 --runs 15 --paired

``PYTHONPATH=/path/to/other/checkout/src`` measures other code in turns.
This is a benchmark, not a test: it asserts nothing and prints figures.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import orjson

import rota
from rota._ids import unique_ids
from rota.models import NewJob, Outcome
from rota.stores import Store, open_store

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _peer_procs import redis_server
from _stores import redis_cpu_seconds

QUEUE = "bench"
CLAIM = 16  # jobs per claim, unless --batch says
SEND = 5_000
PAYLOAD = orjson.dumps({"args": [], "kwargs": {}})


#: How far ahead ``--backlog scheduled`` puts the backlog's jobs (seconds).
LATER = 3600.0


def fill(store: Store, count: int, delay: float = 0.0) -> float:
    """Send ``count`` no-op jobs, due ``delay`` seconds from now; returns jobs/s."""
    started = time.perf_counter()
    for first in range(0, count, SEND):
        n = min(SEND, count - first)
        store.enqueue(
            [NewJob(unique_ids.next(), "noop", QUEUE, PAYLOAD, delay=delay) for _ in range(n)]
        )
    return count / (time.perf_counter() - started)


def drain(store: Store, count: int, batch: int = CLAIM) -> tuple[float, float, float]:
    """Claim and finish ``count`` jobs, ``batch`` per claim; returns jobs/s and
    the microseconds per job spent in claim and in finish calls."""
    done, in_claim, in_finish = 0, 0.0, 0.0
    started = time.perf_counter()
    while done < count:
        t0 = time.perf_counter()
        claimed = store.claim("backlog-bench", [QUEUE], min(batch, count - done))
        t1 = time.perf_counter()
        if not claimed:
            raise SystemExit(f"the queue ran dry after {done} jobs")
        store.finish([Outcome(c.id, c.token, ok=True, result=b"null") for c in claimed])
        in_claim += t1 - t0
        in_finish += time.perf_counter() - t1
        done += len(claimed)
    rate = count / (time.perf_counter() - started)
    return rate, in_claim / count * 1e6, in_finish / count * 1e6


# -- Redis ---------------------------------------------------------------------


def store_cpu(kind: str, where: str) -> float:
    """CPU seconds the store has used so far: the redis-server's, or for
    SQLite, which runs inside this process, this process's."""
    if kind != "redis":
        return time.process_time()
    return redis_cpu_seconds(where)


def redis_bytes(url: str, jobs: int) -> dict[str, float]:
    """used_memory per job without replay copies, and MEMORY USAGE per key kind."""
    import redis

    client = redis.Redis.from_url(url)
    replay = sum(client.memory_usage(k) or 0 for k in client.scan_iter(match="*:req:*", count=5000))
    figures: dict[str, float] = {"used": int(client.info("memory")["used_memory"]) - replay}
    kinds: dict[str, list[int]] = defaultdict(list)
    encodings: dict[str, str] = {}
    for key in client.scan_iter(count=5000):
        kind = key.decode().split("}:", 1)[1].split(":", 1)[0]
        if kind == "req" or (kind == "job" and len(kinds["job"]) >= 1000):
            continue
        kinds[kind].append(client.memory_usage(key, samples=0) or 0)
        encodings.setdefault(kind, client.object("encoding", key).decode())
    figures["job_hash"] = statistics.mean(kinds.pop("job", [0]))
    for kind, sizes in kinds.items():  # the other keys, shared by all jobs
        figures[kind] = sum(sizes) / jobs
    client.close()
    print(f"{'':8}encodings: {encodings}", file=sys.stderr)
    return figures


def script_times(store: Store, url: str, jobs: int) -> dict[str, float]:
    """Server time per call of each script (median microseconds, ``SLOWLOG``
    with every command logged) over a drain of ``jobs`` more jobs."""
    import redis

    from rota.stores.redis import scripts

    lib = scripts.library()
    names = {lib.function(name): name for name in scripts.names()}
    client = redis.Redis.from_url(url)
    fill(store, jobs)
    client.config_set("slowlog-max-len", 4 * jobs)
    client.config_set("slowlog-log-slower-than", 0)
    client.slowlog_reset()
    drain(store, jobs)
    client.config_set("slowlog-log-slower-than", 10_000)
    times: dict[str, list[int]] = defaultdict(list)
    for entry in client.slowlog_get(4 * jobs):
        words = entry["command"].split()
        if words and words[0].upper() == b"FCALL":
            times[names.get(words[1].decode(), "?")].append(int(entry["duration"]))
    client.close()
    return {name: statistics.median(us) for name, us in sorted(times.items())}


@contextlib.contextmanager
def redis_store() -> Iterator[tuple[Store, str]]:
    with redis_server() as url:
        store = open_store(url + "?namespace=backlog")
        try:
            yield store, url
        finally:
            store.close()


@contextlib.contextmanager
def sqlite_store() -> Iterator[tuple[Store, str]]:
    folder = Path(tempfile.mkdtemp(prefix="rota-backlog-"))
    store = open_store(f"sqlite:///{folder / 'rota.db'}")
    try:
        yield store, str(folder / "rota.db")
    finally:
        store.close()
        shutil.rmtree(folder, ignore_errors=True)


def file_bytes(path: str) -> int:
    return sum(Path(path + s).stat().st_size for s in ("", "-wal") if Path(path + s).exists())


# -- one measurement -----------------------------------------------------------


@dataclass
class Backlog:
    """One store filled with a backlog, and the figures of its drains so far."""

    kind: str
    backlog: int
    store: Store
    where: str
    send_rate: float
    bytes_per_job: float
    bytes_by_kind: dict[str, float]
    rates: list[float] = field(default_factory=list)
    claim_us: list[float] = field(default_factory=list)
    finish_us: list[float] = field(default_factory=list)
    cpu_us: list[float] = field(default_factory=list)


def filled(
    stack: contextlib.ExitStack, kind: str, backlog: int, jobs: int, scheduled: bool
) -> Backlog:
    """A fresh store of ``kind`` (closed with ``stack``) holding the backlog and
    the ``jobs`` of the first drain, with its bytes per queued job."""
    opener = redis_store if kind == "redis" else sqlite_store
    store, where = stack.enter_context(opener())
    store.now()  # connect before measuring
    before: dict[str, float] = {"used": 0.0}
    if kind == "redis":
        before = redis_bytes(where, 1)
    else:
        before["used"] = file_bytes(where)
    if scheduled:
        send_rate = fill(store, backlog, LATER) if backlog else 0.0
        fill(store, jobs)
    else:
        send_rate = fill(store, backlog + jobs)
    jobs_sent = backlog + jobs
    after = redis_bytes(where, jobs_sent) if kind == "redis" else {"used": float(file_bytes(where))}
    per_job = (after.pop("used") - before["used"]) / jobs_sent
    return Backlog(kind, backlog, store, where, send_rate, per_job, after)


def drain_once(held: Backlog, jobs: int, batch: int = CLAIM) -> None:
    """Drain ``jobs`` jobs from ``held``, ``batch`` per claim (after sending as
    many more, untimed, from its second drain on) and keep the figures."""
    if held.rates:
        fill(held.store, jobs)
    cpu = store_cpu(held.kind, held.where)
    rate, in_claim, in_finish = drain(held.store, jobs, batch)
    held.cpu_us.append((store_cpu(held.kind, held.where) - cpu) / jobs * 1e6)
    held.rates.append(rate)
    held.claim_us.append(in_claim)
    held.finish_us.append(in_finish)


def row(held: Backlog, per_script: dict[str, float]) -> dict[str, object]:
    """The figures of ``held``'s drains: medians, and every drain's rate."""
    return {
        "store": held.kind,
        "backlog": held.backlog,
        "send_per_s": round(held.send_rate),
        "drain_per_s": round(statistics.median(held.rates)),
        "runs_per_s": [round(r) for r in held.rates],
        "claim_us_per_job": round(statistics.median(held.claim_us), 1),
        "finish_us_per_job": round(statistics.median(held.finish_us), 1),
        "store_cpu_us_per_job": round(statistics.median(held.cpu_us), 1),
        "bytes_per_job": round(held.bytes_per_job),
        "bytes_by_kind": {k: round(v, 1) for k, v in held.bytes_by_kind.items()},
        "server_us_per_call": per_script,
    }


def measure(
    kind: str,
    backlog: int,
    jobs: int,
    runs: int,
    slowlog: bool,
    scheduled: bool = False,
    batch: int = CLAIM,
) -> dict[str, object]:
    """One backlog size alone: fill, then ``runs`` drains."""
    with contextlib.ExitStack() as stack:
        held = filled(stack, kind, backlog, jobs, scheduled)
        for _ in range(runs):
            drain_once(held, jobs, batch)
        if slowlog and kind == "redis":
            return row(held, script_times(held.store, held.where, 2_000))
        return row(held, {})


def measure_paired(
    kind: str, sizes: list[int], jobs: int, runs: int, scheduled: bool = False, batch: int = CLAIM
) -> list[dict[str, object]]:
    """Every backlog size at once, each in a store of its own: ``runs`` rounds,
    each one drain per size (in turns, the order reversed every other round),
    so that the sizes are compared drain by drain at the same moment of a
    machine whose speed drifts. ``vs_first`` is the median over the rounds of
    each round's ratio to the first size."""
    with contextlib.ExitStack() as stack:
        held = [filled(stack, kind, size, jobs, scheduled) for size in sizes]
        for run in range(runs):
            for one in held if run % 2 == 0 else held[::-1]:
                drain_once(one, jobs, batch)
        rows = [row(one, {}) for one in held]
        first = held[0]
        for one, figures in zip(held, rows, strict=True):
            ratios = [a / b for a, b in zip(one.rates, first.rates, strict=True)]
            cpu = [a / b for a, b in zip(one.cpu_us, first.cpu_us, strict=True)]
            figures["vs_first"] = round(statistics.median(ratios), 2)
            figures["rounds_vs_first"] = [round(r, 2) for r in ratios]
            figures["cpu_vs_first"] = round(statistics.median(cpu), 2)
        return rows


def show(kind: str, backlog: str, row: dict[str, object]) -> None:
    """Print one measurement's line (and its Redis details)."""
    extra = ""
    if "rounds_vs_first" in row:
        extra = (
            f" rounds {row['rounds_vs_first']}; "
            f"store CPU per job {row['cpu_vs_first']}x the first size's"
        )
    print(
        f"{kind:6} {backlog} backlog {row['backlog']:>9,}: send {row['send_per_s']:>7,}/s  "
        f"drain {row['drain_per_s']:>6,} jobs/s (runs {row['runs_per_s']}, "
        f"{row['vs_first']}x the first size{extra}; per job: claim {row['claim_us_per_job']} us, "
        f"finish {row['finish_us_per_job']} us; store CPU {row['store_cpu_us_per_job']} us)"
        f"  {row['bytes_per_job']:,} bytes/queued job",
        flush=True,
    )
    if row["bytes_by_kind"]:
        print(f"{'':8}bytes by key kind: {row['bytes_by_kind']}", flush=True)
    if row["server_us_per_call"]:
        print(f"{'':8}server us per call: {row['server_us_per_call']}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stores", default="redis,sqlite", help="redis, sqlite or both")
    parser.add_argument("--sizes", default="1000,100000,1000000", help="backlog sizes N")
    parser.add_argument("--jobs", type=int, default=20_000, help="jobs drained per run (M)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--batch", type=int, default=CLAIM, help="jobs per claim (and finish)")
    parser.add_argument(
        "--backlog",
        choices=("queued", "scheduled"),
        default="queued",
        help="the backlog's jobs are queued, or scheduled an hour ahead (same queue)",
    )
    parser.add_argument("--json", action="store_true", help="one JSON line per measurement")
    parser.add_argument(
        "--slowlog",
        action="store_true",
        help="Redis: then drain 2,000 more with SLOWLOG logging every command, "
        "and report the server's median time per call of each script",
    )
    parser.add_argument(
        "--paired",
        action="store_true",
        help="fill a store per size first, then drain the sizes in turns, round by "
        "round, and compare them round by round (not with --slowlog)",
    )
    args = parser.parse_args()
    code = Path(rota.__file__).resolve().parents[2]
    print(f"rota from {code}", file=sys.stderr)
    sizes = [int(s) for s in args.sizes.split(",")]
    scheduled = args.backlog == "scheduled"

    def report(kind: str, figures: dict[str, object]) -> None:
        if args.json:
            print(json.dumps(figures), flush=True)
        else:
            show(kind, args.backlog, figures)

    for kind in args.stores.split(","):
        if args.paired:
            for figures in measure_paired(kind, sizes, args.jobs, args.runs, scheduled, args.batch):
                report(kind, figures)
            continue
        base = 0
        for size in sizes:  # each reported as soon as it is measured
            figures = measure(kind, size, args.jobs, args.runs, args.slowlog, scheduled, args.batch)
            rate = int(figures["drain_per_s"])  # type: ignore[call-overload]
            base = base or rate
            figures["vs_first"] = round(rate / base, 2)
            report(kind, figures)


if __name__ == "__main__":
    main()
