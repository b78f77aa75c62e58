"""rota on PostgreSQL against procrastinate, side by side, on one server
(or rota alone on MySQL / MariaDB: ``--server mysql://... --systems rota``).

procrastinate runs in a virtualenv of its own under ``bench/.peers-venv/``
(made on first use, never part of rota's environment); rota runs from the
interpreter that runs this script. Every measurement gets a fresh database
on the server (``--server``), dropped afterwards. ONE worker process per
system; the workloads:

1. no-op throughput: send ``--jobs`` no-op jobs in bulk (the send rate is
   reported), start the worker, time until the last one is done; the
   worker's CPU time per job too;
2. enqueue-to-start latency with an idle worker: one job at a time, a few
   ms apart; latency = task start - send;
3. I/O-bound: ``--io-jobs`` jobs that sleep ``--sleep`` s at concurrency
   ``--io-concurrency``: jobs/s from the first start to the last end;
4. idle cost: a worker with nothing to do for ``--idle`` s: its CPU use and
   the transactions its database commits per second (``pg_stat_database``).

Every task reports the same way: a counter and the span of start and end
times, kept in the worker process and sent as a UDP datagram every 5 ms by a
reporter thread (``apps/_report.py``), so the reports never touch the
database. Before the measured runs, each system's candidate worker settings
are tried once per workload and the best kept. Prints markdown::

    .venv/bin/python bench/postgres_peers/peers.py             # about 25 minutes
    .venv/bin/python bench/postgres_peers/peers.py --quick     # about 2 minutes
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from _peer_procs import (  # noqa: E402  (bench/, beside this folder)
    VENVS,
    BenchError,
    compile_rota,
    ensure_venv,
    spawn,
    stop,
    stop_all,
    stop_on_signals,
)
from _servers import Server, server_for  # noqa: E402  (beside this script)

APPS = HERE / "apps"
ROOT = HERE.parents[1]

STALL = 60.0  # seconds without a job done before a measurement is given up
WORKLOADS = ("noop", "latency", "io", "idle")
IDLE_SETTLE = 15.0  # seconds an idle worker runs before it is watched


@dataclass(frozen=True)
class Setting:
    """One way to start a system's worker: ``{url}`` in ``argv`` is the store URL."""

    label: str
    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class System:
    name: str
    title: str
    packages: tuple[str, ...]  # pip requirements of its virtualenv; none for rota
    dists: tuple[str, ...]  # distributions whose versions are reported
    noop: Callable[[], list[Setting]]  # candidates; first: the last full run's pick
    io: Callable[[int], list[Setting]]  # candidates at a concurrency
    url: Callable[[str], str]  # the store URL of the system in a database URL

    @property
    def bin(self) -> Path:
        if not self.packages:
            return Path(sys.executable).parent
        return VENVS / self.name / "bin"


# -- the systems -------------------------------------------------------------


def _rota(mode: str, n: int) -> Setting:
    argv = ("rota", "worker", "app_rota:app", "--url", "{url}", "--concurrency", str(n))
    argv += ("--mode", mode, "--log-level", "warning")
    env = (("BENCH_ASYNC", "1"),) if mode == "async" else ()
    return Setting(f"--mode {mode} --concurrency {n}", argv, env)


def _procrastinate(n: int, sync: bool = False) -> Setting:
    argv = ("procrastinate", "--app", "app_procrastinate.app", "--log-level", "warning")
    argv += ("worker", "--concurrency", str(n))
    kind = "`def` task" if sync else "`async def` task"
    env = (("BENCH_SYNC", "1"),) if sync else ()
    return Setting(f"worker --concurrency {n}, {kind}", argv, env)


SYSTEMS: tuple[System, ...] = (
    System(
        "rota", "**rota**", (), ("rota", "psycopg", "psycopg-pool", "mysqlclient"),
        lambda: [_rota("threads", n) for n in (64, 32, 8)] + [_rota("async", 32)],
        lambda c: [_rota("threads", c), _rota("async", c)],
        lambda db: db if db.startswith("mysql://") else f"{db}?schema=rota",
    ),
    System(
        "procrastinate", "procrastinate",
        ("procrastinate==3.10.0", "psycopg[binary]==3.3.9", "psycopg-pool==3.3.3"),
        ("procrastinate", "psycopg", "psycopg-pool"),
        lambda: [_procrastinate(n) for n in (10, 50, 1)],
        lambda c: [_procrastinate(c), _procrastinate(c, sync=True)],
        lambda db: db,
    ),
)  # fmt: skip


# -- processes -----------------------------------------------------------------


def _udp() -> socket.socket:
    """A UDP socket on a free loopback port."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    return sock


def _free_udp_port() -> int:
    with _udp() as sock:
        return int(sock.getsockname()[1])


# -- the database ----------------------------------------------------------------


@dataclass
class Config:
    server: Server  # without a database name
    jobs: int
    io_jobs: int
    sleep: float
    io_concurrency: int
    samples: int
    gap: float
    idle: float
    timeout: float
    logs: Path
    workloads: tuple[str, ...]


@dataclass(frozen=True)
class Bench:
    """One measurement's database and the socket its tasks report to."""

    system: System
    db: str  # the database's name
    db_url: str
    reports: socket.socket
    stamp_addr: str

    @property
    def store_url(self) -> str:
        return self.system.url(self.db_url)


@contextlib.contextmanager
def bench(system: System, cfg: Config) -> Iterator[Bench]:
    """A fresh database for one measurement (dropped afterwards), with the
    system's schema applied outside every timing."""
    name = f"bench_{system.name}_{uuid.uuid4().hex[:8]}"
    cfg.server.create(name)
    reports = _udp()
    reports.settimeout(0.05)
    stamp_addr = f"127.0.0.1:{_free_udp_port()}"
    found = Bench(system, name, f"{cfg.server.url}/{name}", reports, stamp_addr)
    try:
        client(found, None, "prepare", timeout=120)
        yield found
    finally:
        reports.close()
        cfg.server.drop(name)


def _env(b: Bench, setting: Setting | None) -> dict[str, str]:
    env = os.environ | {
        "BENCH_PG_URL": b.db_url,
        "ROTA_URL": b.store_url,
        "BENCH_REPORT_ADDR": f"127.0.0.1:{b.reports.getsockname()[1]}",
        "BENCH_STAMP_ADDR": b.stamp_addr,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(APPS), os.environ.get("PYTHONPATH")])),
    }
    env.pop("VIRTUAL_ENV", None)
    return env | dict(setting.env if setting else ())


def _python(system: System) -> str:
    return str(system.bin / "python") if system.packages else sys.executable


def client(b: Bench, setting: Setting | None, *args: str, timeout: float) -> dict[str, Any]:
    """Run ``apps/client.py`` in the system's interpreter, with the worker's
    environment (so that an async worker gets ``async def`` tasks)."""
    argv = [_python(b.system), str(APPS / "client.py"), b.system.name, *args]
    proc = spawn(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(b, setting))
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        raise BenchError(f"client {' '.join(args)} took over {timeout:.0f} s") from None
    finally:
        stop(proc)
    if proc.returncode != 0:
        tail = err.decode(errors="replace").strip().splitlines()[-3:]
        raise BenchError(f"client {args[0]} failed: {' / '.join(tail)}")
    found: dict[str, Any] = json.loads(out.decode().strip().splitlines()[-1])
    return found


@contextlib.contextmanager
def worker(b: Bench, setting: Setting, logs: Path) -> Iterator[psutil.Process]:
    """One worker process for the duration of the block; its stderr goes to a log."""
    argv = [a.replace("{url}", b.store_url) for a in setting.argv]
    argv[0] = str(b.system.bin / argv[0])
    log = (logs / f"{b.db}.log").open("wb")
    proc = spawn(argv, stdout=log, stderr=subprocess.STDOUT, env=_env(b, setting), cwd=APPS)
    try:
        yield psutil.Process(proc.pid)
    finally:
        stop(proc)
        log.close()


def cpu_seconds(proc: psutil.Process) -> float:
    """User and system CPU time of ``proc`` and its children so far."""
    times = proc.cpu_times()
    return times.user + times.system + times.children_user + times.children_system


@dataclass
class Progress:
    """The latest report of every worker process: ``pid -> (n, first, last)``."""

    by_pid: dict[str, tuple[int, float, float]] = field(default_factory=dict)

    def read(self, sock: socket.socket) -> None:
        """Wait up to the socket's timeout for a report, then take in every
        report already there."""
        try:
            data = sock.recv(256)
        except TimeoutError:
            return
        timeout = sock.gettimeout()
        sock.setblocking(False)  # a timeout would wait for the next report too
        try:
            while True:
                pid, n, first, last = data.decode().split()
                self.by_pid[pid] = (int(n), float(first), float(last))
                data = sock.recv(256)
        except BlockingIOError:
            return
        finally:
            sock.settimeout(timeout)

    @property
    def done(self) -> int:
        return sum(n for n, _, _ in self.by_pid.values())

    @property
    def span(self) -> tuple[float, float]:
        firsts = [f for _, f, _ in self.by_pid.values()]
        lasts = [x for _, _, x in self.by_pid.values()]
        return min(firsts), max(lasts)


def wait_done(
    b: Bench, total: int, proc: psutil.Process, timeout: float
) -> tuple[float, float, float]:
    """Wait for ``total`` jobs: (first start, last end, worker CPU us per job
    over the jobs done after the first 5 %)."""
    progress = Progress()
    deadline = time.monotonic() + timeout
    seen, seen_at = 0, time.monotonic()
    mark: tuple[int, float] | None = None
    while progress.done < total:
        progress.read(b.reports)
        now = time.monotonic()
        if mark is None and progress.done >= total // 20:
            mark = (progress.done, cpu_seconds(proc))
        if progress.done != seen:
            seen, seen_at = progress.done, now
        if not proc.is_running() or proc.status() == psutil.STATUS_ZOMBIE:
            raise BenchError(f"the worker exited after {seen} of {total} jobs")
        if now > deadline or now - seen_at > STALL:
            raise BenchError(f"{seen} of {total} jobs done, then no progress")
    assert mark is not None
    cpu = (cpu_seconds(proc) - mark[1]) / max(1, progress.done - mark[0]) * 1e6
    first, last = progress.span
    return first, last, cpu


# -- the measurements --------------------------------------------------------------


def _fill(b: Bench, setting: Setting, jobs: int, sleep: float | None, timeout: float) -> float:
    args = ["fill", "--jobs", str(jobs)] + ([] if sleep is None else ["--sleep", str(sleep)])
    return float(client(b, setting, *args, timeout=timeout)["sent_per_s"])


def measure_noop(system: System, setting: Setting, cfg: Config, jobs: int) -> dict[str, float]:
    with bench(system, cfg) as b:
        sent = _fill(b, setting, jobs, None, cfg.timeout)
        spawned = time.time()
        with worker(b, setting, cfg.logs) as proc:
            first, last, cpu = wait_done(b, jobs, proc, cfg.timeout)
    return {
        "send_per_s": sent,
        "noop_per_s": jobs / (last - spawned),
        "steady_per_s": jobs / (last - first),
        "cpu_us_per_job": cpu,
    }


def measure_latency(
    system: System, setting: Setting, cfg: Config, samples: int
) -> dict[str, float]:
    """Enqueue-to-start latency with an idle worker: ``samples`` jobs sent one
    at a time (after the client's warm-up jobs)."""
    with bench(system, cfg) as b, worker(b, setting, cfg.logs):
        args = ["latency", "--samples", str(samples), "--gap", str(cfg.gap), "--budget", "60"]
        answer = client(b, setting, *args, timeout=120)
    found = sorted(answer["latency_ms"])
    if not found:
        raise BenchError("no latency sample")
    return {f"p{p}_ms": found[min(len(found) - 1, len(found) * p // 100)] for p in (50, 95, 99)}


def measure_io(system: System, setting: Setting, cfg: Config) -> dict[str, float]:
    with bench(system, cfg) as b:
        _fill(b, setting, cfg.io_jobs, cfg.sleep, cfg.timeout)
        with worker(b, setting, cfg.logs) as proc:
            first, last, _ = wait_done(b, cfg.io_jobs, proc, cfg.timeout)
    return {"io_per_s": cfg.io_jobs / (last - first)}


def measure_idle(system: System, setting: Setting, cfg: Config) -> dict[str, float]:
    """An idle worker: its CPU use (% of one core) and its database's committed
    transactions per second over ``cfg.idle`` seconds, after IDLE_SETTLE s.

    The settle keeps the start-up's transactions out of the window (a
    backend adds its counts to ``pg_stat_database`` up to a second late, or
    later when the statistics are contended). The count is the database's:
    autovacuum's visits to it count too."""
    with bench(system, cfg) as b, worker(b, setting, cfg.logs) as proc:
        time.sleep(IDLE_SETTLE)
        cpu, commits, started = cpu_seconds(proc), cfg.server.commits(b.db), time.monotonic()
        time.sleep(cfg.idle)
        cpu = cpu_seconds(proc) - cpu
        commits = cfg.server.commits(b.db) - commits
        wall = time.monotonic() - started
    return {"idle_cpu_pct": cpu / wall * 100, "idle_tx_per_s": commits / wall}


# -- settings, runs ------------------------------------------------------------------


@dataclass
class Outcome:
    system: System
    settings: dict[str, Setting] = field(default_factory=dict)
    tried: list[tuple[str, Setting, str]] = field(default_factory=list)
    runs: list[dict[str, float]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    versions: dict[str, str] = field(default_factory=dict)

    def median(self, key: str) -> float | None:
        values = [r[key] for r in self.runs if key in r]
        return statistics.median(values) if values else None


def _pick(
    out: Outcome, kind: str, candidates: list[Setting], measure: Callable[[Setting], float]
) -> Setting | None:
    """The candidate with the highest figure (the lowest, for latency)."""
    if len(candidates) == 1:
        return candidates[0]
    lowest = kind == "latency"
    best: tuple[float, Setting] | None = None
    for setting in candidates:
        try:
            value = measure(setting)
        except BenchError as exc:
            out.tried.append((kind, setting, f"failed: {exc}"))
            continue
        shown = f"{value:.2f} ms" if lowest else f"{value:,.0f} jobs/s"
        out.tried.append((kind, setting, shown))
        print(f"  {out.system.name:13} {kind:7} {setting.label:40} {shown:>13}", flush=True)
        if best is None or (value < best[0] if lowest else value > best[0]):
            best = (value, setting)
    return best[1] if best else None


def choose(out: Outcome, cfg: Config, sweep_jobs: int, sweep: bool) -> None:
    """Each workload's setting: the best candidate, or the first without a sweep.
    The idle worker runs with the no-op workload's setting."""
    system = out.system
    noop, io = system.noop(), system.io(cfg.io_concurrency)
    trial = max(30, cfg.samples // 3)
    workloads: dict[str, tuple[list[Setting], Callable[[Setting], float]]] = {
        "noop": (noop, lambda s: measure_noop(system, s, cfg, sweep_jobs)["noop_per_s"]),
        "latency": (noop, lambda s: measure_latency(system, s, cfg, trial)["p50_ms"]),
        "io": (io, lambda s: measure_io(system, s, cfg)["io_per_s"]),
    }
    for workload in cfg.workloads:
        if workload == "idle":
            continue
        candidates, measure = workloads[workload]
        best = _pick(out, workload, candidates if sweep else candidates[:1], measure)
        if best is not None:
            out.settings[workload] = best
    if "idle" in cfg.workloads:
        out.settings["idle"] = out.settings.get("noop", noop[0])


def run_once(out: Outcome, cfg: Config) -> None:
    measures: dict[str, Callable[[Setting], dict[str, float]]] = {
        "noop": lambda s: measure_noop(out.system, s, cfg, cfg.jobs),
        "latency": lambda s: measure_latency(out.system, s, cfg, cfg.samples),
        "io": lambda s: measure_io(out.system, s, cfg),
        "idle": lambda s: measure_idle(out.system, s, cfg),
    }
    figures: dict[str, float] = {}
    for workload, setting in out.settings.items():
        try:
            figures |= measures[workload](setting)
        except BenchError as exc:
            out.errors.append(f"{workload}: {exc}")
            print(f"  {out.system.name}: {workload}: {exc}", flush=True)
    if figures:
        out.runs.append(figures)
        shown = "  ".join(f"{k}={v:,.2f}" for k, v in figures.items())
        print(f"  {out.system.name:13} {shown}", flush=True)


# -- environments and versions ---------------------------------------------------


def versions(system: System) -> dict[str, str]:
    code = (
        "import importlib.metadata as m, json; "
        f"print(json.dumps({{d: m.version(d) for d in {list(system.dists)!r}}}))"
    )
    done = subprocess.run(
        [_python(system), "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    found: dict[str, str] = json.loads(done.stdout)
    return found


def machine(server: Server) -> str:
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
        capture_output=True, text=True, timeout=30,
    ).stdout.strip()  # fmt: skip
    return (
        f"{os.cpu_count()} CPUs, Linux {platform.release()}, Python {platform.python_version()}, "
        f"{server.version()}, rota at {commit or '?'}"
    )


# -- report ----------------------------------------------------------------------

#: (key, column title, digits) of each workload's table.
TABLES: dict[str, list[tuple[str, str, int]]] = {
    "noop": [
        ("send_per_s", "bulk send (jobs/s)", 0),
        ("noop_per_s", "no-op drain, worker start → all done (jobs/s)", 0),
        ("steady_per_s", "first start → last end (jobs/s)", 0),
        ("cpu_us_per_job", "worker CPU per job (µs)", 0),
    ],
    "latency": [("p50_ms", "latency p50 (ms)", 2), ("p95_ms", "p95 (ms)", 2),
                ("p99_ms", "p99 (ms)", 2)],
    "io": [("io_per_s", "I/O-bound (jobs/s)", 0)],
    "idle": [("idle_cpu_pct", "idle worker CPU (% of a core)", 2),
             ("idle_tx_per_s", "transactions committed/s", 1)],
}  # fmt: skip


def _table(outs: list[Outcome], workload: str) -> list[str]:
    columns = TABLES[workload]
    lines = [
        "| system | worker | " + " | ".join(title for _, title, _ in columns) + " |",
        "|---|---|" + "---:|" * len(columns),
    ]
    for o in outs:
        setting = o.settings.get(workload)
        cells = [o.system.title, f"`{setting.label}`" if setting else "none worked"]
        for key, _, digits in columns:
            value = o.median(key)
            cells.append("n/a" if value is None else f"{value:,.{digits}f}")
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def report(outs: list[Outcome], cfg: Config, runs: int, command: str, started: float) -> str:
    lines = [f"Median of {runs} run(s), the systems taking turns within each run.", ""]
    for workload in cfg.workloads:
        lines += [*_table(outs, workload), ""]
    lines += ["| system | versions |", "|---|---|"]
    lines += [f"| {o.system.title} | " + ", ".join(f"{k} {v}" for k, v in o.versions.items())
              + " |" for o in outs]  # fmt: skip
    tried = [(o, kind, s, r) for o in outs for kind, s, r in o.tried]
    if tried:
        lines += ["", "Settings tried (one run each; the best was kept):", ""]
        lines += ["| system | workload | setting | result |", "|---|---|---|---:|"]
        lines += [f"| {o.system.title} | {k} | `{s.label}` | {r} |" for o, k, s, r in tried]
    errors = [(o.system.title, e) for o in outs for e in o.errors]
    if errors:
        lines += ["", "Errors:", ""] + [f"- {title}: {error}" for title, error in errors]
    per_run = [f"- {o.system.name} run {n + 1}: " + ", ".join(f"{k} {v:,.2f}" for k, v in r.items())
               for o in outs for n, r in enumerate(o.runs)]  # fmt: skip
    lines += ["", "Per run:", "", *per_run]
    minutes = (time.monotonic() - started) / 60
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    lines += ["", f"Machine: {machine(cfg.server)}; load average at the end {load}; "
              f"took {minutes:.1f} min; transactions committed counted: "
              f"{cfg.server.commits_scope}.", "", f"Command: `{command}`"]  # fmt: skip
    return "\n".join(lines)


# -- main ------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server", default="postgresql://postgres@127.0.0.1:5432",
                        help="URL of the server, without a database name: postgresql://... "
                        "or, for rota alone, mysql://...")  # fmt: skip
    parser.add_argument("--systems", default=",".join(s.name for s in SYSTEMS))
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--io-jobs", type=int, default=2_000)
    parser.add_argument("--sleep", type=float, default=0.05)
    parser.add_argument("--io-concurrency", type=int, default=50)
    parser.add_argument("--samples", type=int, default=300)
    parser.add_argument("--gap", type=float, default=0.005, help="seconds between latency jobs")
    parser.add_argument("--idle", type=float, default=20.0, help="seconds of idle watching")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--sweep-jobs", type=int, help="jobs per no-op try (default: --jobs/4)")
    parser.add_argument("--no-sweep", action="store_true", help="first candidate setting only")
    parser.add_argument("--quick", action="store_true",
                        help="3,000 no-op and 500 I/O jobs, 100 latency samples, 5 s idle, "
                        "one run, no sweep")  # fmt: skip
    parser.add_argument("--workloads", default=",".join(WORKLOADS),
                        help="some of noop, latency, io, idle (default: all)")  # fmt: skip
    parser.add_argument("--json", type=Path, help="also write every figure here")
    parser.add_argument("--timeout", type=float, default=600.0, help="bound on any one wait")
    return parser


def main() -> None:
    parser = _parser()
    args = parser.parse_args()
    if args.quick:
        args.jobs, args.io_jobs, args.samples, args.idle = 3_000, 500, 100, 5.0
        args.runs, args.no_sweep = 1, True
    names = args.systems.split(",")
    if unknown := set(names) - {s.name for s in SYSTEMS}:
        parser.error(f"unknown systems: {', '.join(sorted(unknown))}")
    workloads = tuple(args.workloads.split(","))
    if set(workloads) - set(WORKLOADS):
        parser.error(f"unknown workloads: {args.workloads}; expected some of {WORKLOADS}")
    if args.server.startswith("mysql://") and names != ["rota"]:
        parser.error("on a MySQL server only rota runs: --systems rota")
    if "rota" in names and importlib.util.find_spec("rota") is None:
        parser.error("run this script with rota's environment: .venv/bin/python")
    started = time.monotonic()
    logs = Path(tempfile.mkdtemp(prefix="rota-pg-peers-"))
    cfg = Config(
        server_for(args.server.rstrip("/")), args.jobs, args.io_jobs, args.sleep,
        args.io_concurrency, args.samples, args.gap, args.idle, args.timeout, logs, workloads,
    )  # fmt: skip
    outs = [Outcome(s) for s in SYSTEMS if s.name in names]
    compile_rota()  # (each peer's packages were compiled as pip installed them)
    stop_on_signals()  # so that the finally below stops every child
    try:
        for out in outs:
            ensure_venv(out.system.name, out.system.packages)
            out.versions = versions(out.system)
        print(f"worker logs in {logs}\nchoosing settings:", flush=True)
        for out in outs:
            choose(out, cfg, args.sweep_jobs or max(1, args.jobs // 4), not args.no_sweep)
        for n in range(args.runs):
            print(f"run {n + 1} of {args.runs}:", flush=True)
            for out in outs if n % 2 == 0 else outs[::-1]:  # who goes first alternates
                run_once(out, cfg)
    finally:
        stop_all()
    command = "python bench/postgres_peers/peers.py " + " ".join(sys.argv[1:])
    print("\n" + report(outs, cfg, args.runs, command.strip(), started))
    if args.json:
        raw = {o.system.name: {"runs": o.runs, "errors": o.errors} for o in outs}
        args.json.write_text(json.dumps(raw, indent=1))


if __name__ == "__main__":
    main()
