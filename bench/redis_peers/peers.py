"""rota on Redis against the Python task queues that run on Redis, side by side.

Celery, RQ, Dramatiq, Huey, taskiq, saq and arq each run in a virtualenv of
their own under ``bench/.peers-venv/`` (made on first use, never part of
rota's environment); rota runs from the interpreter that runs this script.
Each measurement gets a private ``redis-server`` without persistence on a
free port. Three workloads, ONE worker process per system:

1. no-op throughput: send ``--jobs`` no-op jobs (bulk where the library has
   it), start the worker, time until the last one is done;
2. enqueue-to-start latency with an idle worker: one job at a time, a few
   ms apart; latency = task start - send;
3. I/O-bound: ``--io-jobs`` jobs that sleep ``--sleep`` s at concurrency
   ``--io-concurrency``: jobs/s from the first start to the last end.

Every task reports the same way: a counter and the span of start and end
times, kept in the worker process and written to Redis every 5 ms by a
reporter thread (``apps/_common.py``). Before the measured runs, each
system's candidate worker settings are tried once per workload and the best
kept: the fastest no-op drain, the lowest p50 latency (on a third of the
samples), the fastest I/O run. Prints markdown::

    .venv/bin/python bench/redis_peers/peers.py             # about 15 minutes
    .venv/bin/python bench/redis_peers/peers.py --quick     # about 2 minutes
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from _peer_procs import (  # noqa: E402  (bench/, beside this folder)
    VENVS,
    BenchError,
    ensure_venv,
    spawn,
    stop,
    stop_all,
    stop_on_signals,
)

APPS = HERE / "apps"
ROOT = HERE.parents[1]

DONE, SPAN = "bench:done", "bench:span"
STALL = 60.0  # seconds without a job done before a measurement is given up


WORKLOADS = ("noop", "latency", "io")
#: The systems that run on SQLite (``--store sqlite``), and where its files go.
SQLITE_SYSTEMS = ("rota", "huey")
SQLITE_DIR = "BENCH_SQLITE_DIR"


@dataclass(frozen=True)
class Setting:
    """One way to start a system's worker. ``{url}`` in ``argv`` is the Redis URL."""

    label: str
    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class System:
    name: str
    title: str
    packages: tuple[str, ...]  # pip requirements of its virtualenv; none for rota
    dists: tuple[str, ...]  # distributions whose versions are reported
    noop: Callable[[], list[Setting]]  # candidates; first: the last full run's pick, for --no-sweep
    io: Callable[[int], list[Setting]]  # candidates at a concurrency
    noop_cap: int | None = None  # at most this many no-op jobs (one job at a time)
    io_cap: int | None = None  # at most this many I/O jobs
    notes: tuple[str, ...] = ()

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


def _celery(pool: str, n: int, prefetch: int) -> Setting:
    argv = ("celery", "-A", "app_celery", "worker", "-P", pool, "-c", str(n))
    argv += ("--prefetch-multiplier", str(prefetch), "--without-gossip", "--without-mingle")
    argv += ("--without-heartbeat", "-l", "WARNING")
    return Setting(f"-P {pool} -c {n} --prefetch-multiplier {prefetch}", argv)


def _dramatiq(n: int) -> Setting:
    argv = ("dramatiq", "app_dramatiq", "--processes", "1", "--threads", str(n))
    return Setting(f"--processes 1 --threads {n}", argv)


def _huey(n: int, kind: str = "thread") -> Setting:
    return Setting(
        f"-k {kind} -w {n}", ("huey_consumer", "app_huey.huey", "-k", kind, "-w", str(n), "-q")
    )


def _taskiq(broker: str, n: int) -> Setting:
    argv = ("taskiq", "worker", "app_taskiq:broker", "--workers", "1")
    argv += ("--max-async-tasks", str(n), "--log-level", "WARNING")
    name = {"stream": "RedisStreamBroker", "list": "ListQueueBroker"}[broker]
    return Setting(
        f"{name}, --workers 1 --max-async-tasks {n}", argv, (("BENCH_TASKIQ_BROKER", broker),)
    )


def _saq(n: int) -> Setting:
    return Setting(
        f"concurrency={n}", ("saq", "app_saq.settings"), (("BENCH_CONCURRENCY", str(n)),)
    )


def _arq(n: int, poll: float) -> Setting:
    env = (("BENCH_CONCURRENCY", str(n)), ("BENCH_POLL", str(poll)))
    return Setting(f"max_jobs={n}, poll_delay={poll}", ("python", "app_arq.py"), env)


_RQ = Setting(
    "SimpleWorker (one job at a time)",
    ("rq", "worker", "-w", "rq.worker.SimpleWorker", "-u", "{url}", "-q", "default"),
)  # fmt: skip

SYSTEMS: tuple[System, ...] = (
    System(
        "rota", "**rota**", (), ("rota",),
        lambda: [_rota(m, n) for m in ("threads", "async") for n in (64, 32, 8)]
        + [_rota("processes", 2)],
        lambda c: [_rota("threads", c), _rota("async", c)],
    ),
    System(
        "celery", "Celery", ("celery[redis]==5.7.0", "gevent==26.9.0", "hiredis==3.5.0"),
        ("celery", "kombu", "redis"),
        lambda: [_celery("threads", 8, 16), _celery("solo", 1, 64), _celery("gevent", 64, 4),
                 _celery("prefork", 2, 64)],
        lambda c: [_celery("threads", c, 4), _celery("gevent", c, 4)],
        notes=("prefork starts child processes (one per `-c`); the others run in the worker "
               "process. Messages are acknowledged on receipt (Celery's default, no "
               "`acks_late`).",),
    ),
    System(
        "rq", "RQ", ("rq==3.0.0", "hiredis==3.5.0"), ("rq", "redis"),
        lambda: [_RQ], lambda c: [_RQ], noop_cap=5_000, io_cap=200,
        notes=("one job at a time per worker process (concurrency needs more processes, "
               "e.g. `rq worker-pool`), so its rates do not depend on the number of jobs: "
               "it runs at most 5,000 no-op jobs and 200 I/O jobs (concurrency 1, ceiling "
               "20 jobs/s) to keep the run short.",),
    ),
    System(
        "dramatiq", "Dramatiq", ("dramatiq[redis]==2.2.1", "hiredis==3.5.0"),
        ("dramatiq", "redis"),
        lambda: [_dramatiq(32), _dramatiq(8)], lambda c: [_dramatiq(c)],
        notes=("an idle Redis consumer polls with a growing back-off up to the worker "
               "timeout (1 s by default), which shows in its latency.",),
    ),
    System(
        "huey", "Huey", ("huey==3.5.4", "redis", "hiredis==3.5.0"), ("huey", "redis"),
        lambda: [_huey(8), _huey(32), _huey(2, "process")], lambda c: [_huey(c)],
    ),
    System(
        "taskiq", "taskiq", ("taskiq==0.13.0", "taskiq-redis==1.2.4", "hiredis==3.5.0"),
        ("taskiq", "taskiq-redis", "redis"),
        lambda: [_taskiq("list", 100), _taskiq("stream", 100)],
        lambda c: [_taskiq("list", c), _taskiq("stream", c)],
        notes=("`ListQueueBroker` pops with `BRPOP` and never acknowledges: a job popped by "
               "a worker that dies is lost. `RedisStreamBroker` acknowledges after the task.",),
    ),
    System(
        "saq", "saq", ("saq[redis]==0.26.4", "hiredis==3.5.0", "typing_extensions"),
        ("saq", "redis"),
        lambda: [_saq(100), _saq(10)], lambda c: [_saq(c)],
    ),
    System(
        "arq", "arq", ("arq==0.28.0", "hiredis==3.5.0"), ("arq", "redis"),
        lambda: [_arq(500, 0.01), _arq(100, 0.01), _arq(10, 0.5)],
        lambda c: [_arq(c, 0.01)],
        notes=("the worker polls the queue every `poll_delay` (0.5 s by default); started "
               "with `run_worker` so that it does not log every job.",),
    ),
)  # fmt: skip


# -- processes -----------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def redis_server() -> Iterator[redis.Redis]:
    """A private redis-server (no persistence) on a free port, for one measurement."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise SystemExit("redis-server is not installed (apt-get install redis-server)")
    port = _free_port()
    proc = spawn(
        [binary, "--port", str(port), "--save", "", "--appendonly", "no", "--daemonize", "no"],
        stdout=subprocess.DEVNULL,
    )
    client = redis.Redis(port=port)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise BenchError(f"redis-server on port {port} did not start") from None
                time.sleep(0.02)
        yield client
    finally:
        client.close()
        stop(proc)


def _url(server: redis.Redis) -> str:
    return f"redis://127.0.0.1:{server.connection_pool.connection_kwargs['port']}/0"


def _queue_url(server: redis.Redis) -> str:
    """Where the jobs of the measurement on ``server`` go: that Redis, or with
    ``--store sqlite`` a fresh SQLite file (named after the server's port)."""
    folder = os.environ.get(SQLITE_DIR)
    if folder is None:
        return _url(server)
    return f"sqlite:///{folder}/rota-{server.connection_pool.connection_kwargs['port']}.db"


def _env(system: System, server: redis.Redis, setting: Setting | None = None) -> dict[str, str]:
    url, queue = _url(server), _queue_url(server)
    env = os.environ | {"BENCH_REDIS_URL": url, "ROTA_URL": queue, "PYTHONPATH": str(APPS)}
    if queue.startswith("sqlite:///"):  # Huey's own file beside rota's
        path = Path(queue.removeprefix("sqlite:///"))
        env["BENCH_SQLITE_PATH"] = str(path.with_name(path.name.replace("rota-", "huey-")))
    env.pop("VIRTUAL_ENV", None)
    return env | dict(setting.env if setting else ())


def _python(system: System) -> str:
    return str(system.bin / "python") if system.packages else sys.executable


def client(
    system: System, setting: Setting, server: redis.Redis, *args: str, timeout: float
) -> dict[str, Any]:
    """Run ``apps/client.py`` in the system's interpreter, with the worker's environment
    (a setting may change how jobs are sent); its JSON answer."""
    argv = [_python(system), str(APPS / "client.py"), system.name, *args]
    env = _env(system, server, setting)
    proc = spawn(argv, cwd=APPS, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        raise BenchError(f"{system.name} client: no answer in {timeout:.0f} s") from None
    finally:
        stop(proc)
    if proc.returncode != 0:
        tail = err.decode(errors="replace").strip().splitlines()[-3:]
        raise BenchError(f"{system.name} client failed: {' / '.join(tail)}")
    answer: dict[str, Any] = json.loads(out.decode().strip().splitlines()[-1])
    return answer


@contextlib.contextmanager
def worker(
    system: System, setting: Setting, server: redis.Redis, logs: Path
) -> Iterator[subprocess.Popen[bytes]]:
    """The system's worker process, started with ``setting``, for the block."""
    url = _queue_url(server)
    argv = [a.replace("{url}", url) for a in setting.argv]
    argv[0] = str(system.bin / argv[0]) if argv[0] != "python" else _python(system)
    path = logs / f"{system.name}-{time.time_ns()}.log"
    log = path.open("wb")
    proc = spawn(
        argv, cwd=APPS, env=_env(system, server, setting), stdout=log, stderr=subprocess.STDOUT
    )
    try:
        yield proc
    except BenchError as exc:
        raise BenchError(f"{exc} (worker log: {path})") from None
    finally:
        stop(proc)
        log.close()


def wait_done(
    server: redis.Redis, total: int, proc: subprocess.Popen[bytes], timeout: float
) -> tuple[float, float]:
    """Block until ``total`` jobs reported; (first start, last end) as ``time.time()``.

    Gives up after ``timeout`` seconds, or STALL seconds without progress."""
    started = time.monotonic()
    progress, last = started, 0
    while (done := _done(server)) < total:
        now = time.monotonic()
        if done != last:
            progress, last = now, done
        if proc.poll() is not None:
            raise BenchError(f"the worker exited (code {proc.returncode}) after {done} jobs")
        if now - started > timeout or now - progress > STALL:
            raise BenchError(f"{done} of {total} jobs done after {now - started:.0f} s")
        time.sleep(0.01)
    return _span(server)


def _done(server: redis.Redis) -> int:
    fields = server.hgetall(DONE)
    return sum(int(v) for k, v in fields.items() if k.endswith(b":n"))


def _span(server: redis.Redis) -> tuple[float, float]:
    """(first start, last end) over every process's report."""
    fields = server.hgetall(DONE)
    span = dict(server.zrange(SPAN, 0, -1, withscores=True))
    firsts = [float(v) for k, v in fields.items() if k.endswith(b":first")]
    lasts = [float(v) for k, v in fields.items() if k.endswith(b":last")]
    firsts.append(span.get(b"first", float("inf")))
    lasts.append(span.get(b"last", 0.0))
    return min(firsts), max(lasts)


# -- measurements --------------------------------------------------------------


@dataclass
class Config:
    jobs: int
    io_jobs: int
    sleep: float
    io_concurrency: int
    samples: int
    gap: float
    latency_budget: float
    timeout: float
    logs: Path
    workloads: tuple[str, ...] = WORKLOADS


def _fill(
    system: System, setting: Setting, server: redis.Redis, jobs: int, cfg: Config, sleep: float
) -> float:
    """Send ``jobs`` jobs (no-op, or I/O-bound if ``sleep``); the sending rate."""
    args = ["fill", "--jobs", str(jobs)] + (["--sleep", str(sleep)] if sleep else [])
    sent: float = client(system, setting, server, *args, timeout=cfg.timeout)["sent_per_s"]
    return sent


def measure_noop(system: System, setting: Setting, cfg: Config, jobs: int) -> dict[str, float]:
    """Send ``jobs`` no-op jobs, then start the worker and time the drain."""
    jobs = min(jobs, system.noop_cap or jobs)
    figures: dict[str, float] = {}
    with redis_server() as server:
        figures["sent_per_s"] = _fill(system, setting, server, jobs, cfg, 0.0)
        spawned = time.time()
        with worker(system, setting, server, cfg.logs) as proc:
            first, last = wait_done(server, jobs, proc, cfg.timeout)
            figures["noop_per_s"] = jobs / (last - spawned)
            figures["steady_per_s"] = jobs / (last - first)
    return figures


def measure_latency(
    system: System, setting: Setting, cfg: Config, samples: int
) -> dict[str, float]:
    """Enqueue-to-start latency with an idle worker: ``samples`` jobs sent one
    at a time (after the client's warm-up jobs)."""
    with redis_server() as server, worker(system, setting, server, cfg.logs):
        args = ["latency", "--samples", str(samples), "--gap", str(cfg.gap)]
        args += ["--budget", str(cfg.latency_budget)]
        answer = client(system, setting, server, *args, timeout=cfg.latency_budget + 60)
    found = sorted(answer["latency_ms"])
    if not found:
        raise BenchError("no latency sample")
    figures = {"samples": float(len(found))}
    for p in (50, 95, 99):
        figures[f"p{p}_ms"] = found[min(len(found) - 1, len(found) * p // 100)]
    return figures


def measure_io(system: System, setting: Setting, cfg: Config) -> dict[str, float]:
    jobs = min(cfg.io_jobs, system.io_cap or cfg.io_jobs)
    with redis_server() as server:
        _fill(system, setting, server, jobs, cfg, cfg.sleep)
        spawned = time.time()
        with worker(system, setting, server, cfg.logs) as proc:
            first, last = wait_done(server, jobs, proc, cfg.timeout)
    return {"io_per_s": jobs / (last - first), "io_from_start_per_s": jobs / (last - spawned)}


@dataclass
class Outcome:
    system: System
    noop_setting: Setting | None = None
    latency_setting: Setting | None = None
    io_setting: Setting | None = None
    tried: list[tuple[str, Setting, str]] = field(default_factory=list)
    runs: list[dict[str, float]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    versions: dict[str, str] = field(default_factory=dict)

    def median(self, key: str) -> float | None:
        values = [r[key] for r in self.runs if key in r]
        return statistics.median(values) if values else None


def _pick(
    out: Outcome,
    kind: str,
    candidates: list[Setting],
    measure: Callable[[Setting], float],
    unit: str = "jobs/s",
) -> Setting | None:
    """The candidate with the highest figure (the lowest, for latency in ms)."""
    if len(candidates) == 1:
        return candidates[0]
    lowest = unit == "ms"
    best: tuple[float, Setting] | None = None
    for setting in candidates:
        try:
            value = measure(setting)
        except BenchError as exc:
            out.tried.append((kind, setting, f"failed: {exc}"))
            continue
        shown = f"{value:.2f} {unit}" if lowest else f"{value:,.0f} {unit}"
        out.tried.append((kind, setting, shown))
        print(f"  {out.system.name:9} {kind:7} {setting.label:50} {shown:>13}", flush=True)
        if best is None or (value < best[0] if lowest else value > best[0]):
            best = (value, setting)
    return best[1] if best else None


def choose(out: Outcome, cfg: Config, sweep_jobs: int, sweep: bool) -> None:
    """Each asked-for workload's setting: the best candidate, or the first without a sweep."""
    system = out.system
    noop, io = system.noop(), system.io(cfg.io_concurrency)
    trial = max(30, cfg.samples // 3)
    workloads: dict[str, tuple[str, list[Setting], Callable[[Setting], float], str]] = {
        "noop": ("no-op", noop, lambda s: measure_noop(system, s, cfg, sweep_jobs)["noop_per_s"],
                 "jobs/s"),
        "latency": ("latency", noop, lambda s: measure_latency(system, s, cfg, trial)["p50_ms"],
                    "ms"),
        "io": ("I/O", io, lambda s: measure_io(system, s, cfg)["io_per_s"], "jobs/s"),
    }  # fmt: skip
    for workload in cfg.workloads:
        kind, candidates, measure, unit = workloads[workload]
        best = _pick(out, kind, candidates if sweep else candidates[:1], measure, unit)
        setattr(out, f"{workload}_setting", best)


def run_once(out: Outcome, cfg: Config) -> None:
    figures: dict[str, float] = {}
    try:
        if out.noop_setting is not None:
            figures |= measure_noop(out.system, out.noop_setting, cfg, cfg.jobs)
        if out.latency_setting is not None:
            figures |= measure_latency(out.system, out.latency_setting, cfg, cfg.samples)
        if out.io_setting is not None:
            figures |= measure_io(out.system, out.io_setting, cfg)
    except BenchError as exc:
        out.errors.append(str(exc))
        print(f"  {out.system.name}: {exc}", flush=True)
    if figures:
        out.runs.append(figures)
        shown = "  ".join(f"{k}={v:,.1f}" for k, v in figures.items())
        print(f"  {out.system.name:9} {shown}", flush=True)


# -- environments and versions ---------------------------------------------------


def versions(system: System) -> dict[str, str]:
    code = (
        "import importlib.metadata as m, json, sys; "
        f"print(json.dumps({{d: m.version(d) for d in {list(system.dists)!r}}}))"
    )
    done = subprocess.run(
        [_python(system), "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    found: dict[str, str] = json.loads(done.stdout)
    return found


def machine() -> str:
    server = subprocess.run(
        ["redis-server", "--version"], capture_output=True, text=True, timeout=30
    ).stdout.split()
    redis_version = next((w[2:] for w in server if w.startswith("v=")), "?")
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
        capture_output=True, text=True, timeout=30,
    ).stdout.strip()  # fmt: skip
    return (
        f"{os.cpu_count()} CPUs, Linux {platform.release()}, Python {platform.python_version()}, "
        f"Redis {redis_version}, rota at {commit or '?'}"
    )


# -- report ----------------------------------------------------------------------


def _best_peer(outs: list[Outcome], key: str, higher: bool) -> float | None:
    values = [v for o in outs if o.system.name != "rota" and (v := o.median(key)) is not None]
    if not values:
        return None
    return max(values) if higher else min(values)


def _cell(value: float | None, best: float | None, digits: int = 0) -> str:
    if value is None:
        return "n/a"
    text = f"{value:,.{digits}f}"
    return f"{text} ({value / best:.2f}x)" if best else text


def report(outs: list[Outcome], cfg: Config, runs: int, command: str, started: float) -> str:
    best = {
        "noop_per_s": _best_peer(outs, "noop_per_s", True),
        "steady_per_s": _best_peer(outs, "steady_per_s", True),
        "p50_ms": _best_peer(outs, "p50_ms", False),
        "io_per_s": _best_peer(outs, "io_per_s", True),
    }
    lines = [
        f"Median of {runs} run(s); in brackets, the ratio to the best peer (rota excluded).",
        "",
        f"| system | no-op, {cfg.jobs:,} jobs: worker start → all done (jobs/s) "
        "| no-op, first start → last end (jobs/s) | latency p50 (ms) | p95 (ms) | p99 (ms) "
        f"| I/O, {cfg.io_jobs:,} jobs of {cfg.sleep * 1000:.0f} ms, concurrency "
        f"{cfg.io_concurrency} (jobs/s) |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for o in outs:
        p95, p99 = o.median("p95_ms"), o.median("p99_ms")
        cells = [
            o.system.title,
            _cell(o.median("noop_per_s"), best["noop_per_s"]),
            _cell(o.median("steady_per_s"), best["steady_per_s"]),
            _cell(o.median("p50_ms"), best["p50_ms"], 2),
            "n/a" if p95 is None else f"{p95:,.1f}",
            "n/a" if p99 is None else f"{p99:,.1f}",
            _cell(o.median("io_per_s"), best["io_per_s"]),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    lines += [
        "",
        "| system | versions | no-op worker | latency worker | I/O worker |",
        "|---|---|---|---|---|",
    ]
    for o in outs:
        found = ", ".join(f"{k} {v}" for k, v in o.versions.items())
        settings = (o.noop_setting, o.latency_setting, o.io_setting)
        chosen = [
            f"`{s.label}`" if s else "none worked" if kind in cfg.workloads else "not run"
            for kind, s in zip(WORKLOADS, settings, strict=True)
        ]
        lines.append(f"| {o.system.title} | {found} | " + " | ".join(chosen) + " |")
    tried = [(o, kind, s, r) for o in outs for kind, s, r in o.tried]
    if tried:
        lines += ["", "Settings tried (one run each; the best was kept):", ""]
        lines += ["| system | workload | setting | result |", "|---|---|---|---:|"]
        lines += [f"| {o.system.title} | {k} | `{s.label}` | {r} |" for o, k, s, r in tried]
    notes = [(o.system.title, n) for o in outs for n in o.system.notes]
    notes += [(o.system.title, f"error: {e}") for o in outs for e in o.errors]
    if notes:
        lines += ["", "Notes:", ""] + [f"- {title}: {note}" for title, note in notes]
    lines += ["", *_targets(outs, best)]
    minutes = (time.monotonic() - started) / 60
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    lines += ["", f"Machine: {machine()}; load average at the end {load}; took {minutes:.1f} min."]
    lines += ["", f"Command: `{command}`"]
    return "\n".join(lines)


def _targets(outs: list[Outcome], best: dict[str, float | None]) -> list[str]:
    rota = next((o for o in outs if o.system.name == "rota"), None)
    if rota is None or not any(best.values()):
        return []
    noop, p50, io = rota.median("noop_per_s"), rota.median("p50_ms"), rota.median("io_per_s")
    checks = []
    if noop is not None and best["noop_per_s"]:
        ratio = noop / best["noop_per_s"]
        checks.append(f"no-op throughput ≥ 2x best peer: {ratio:.2f}x ({_ok(ratio >= 2)})")
    if p50 is not None and best["p50_ms"]:
        ok = p50 <= best["p50_ms"] and p50 < 5
        checks.append(
            f"p50 ≤ best peer's and < 5 ms: {p50:.2f} vs {best['p50_ms']:.2f} ms ({_ok(ok)})"
        )
    if io is not None:
        checks.append(f"I/O-bound ≥ 950 jobs/s: {io:,.0f} ({_ok(io >= 950)})")
    return ["rota's targets: " + "; ".join(checks) + "."]


def _ok(met: bool) -> str:
    return "met" if met else "missed"


# -- main ------------------------------------------------------------------------


def _systems(parser: argparse.ArgumentParser, args: argparse.Namespace) -> list[str]:
    """The systems to run, checked against ``--store``."""
    names: list[str] = args.systems.split(",")
    unknown = set(names) - {s.name for s in SYSTEMS}
    if unknown:
        parser.error(f"unknown systems: {', '.join(sorted(unknown))}")
    if "rota" in names and importlib.util.find_spec("rota") is None:
        parser.error("run this script with rota's environment: .venv/bin/python")
    if args.store == "sqlite":
        if args.systems == parser.get_default("systems"):
            names = list(SQLITE_SYSTEMS)
        if set(names) - set(SQLITE_SYSTEMS):
            parser.error(f"on SQLite only {' and '.join(SQLITE_SYSTEMS)} run: --systems rota,huey")
    return names


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--systems", default=",".join(s.name for s in SYSTEMS))
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--io-jobs", type=int, default=2_000)
    parser.add_argument("--sleep", type=float, default=0.05)
    parser.add_argument("--io-concurrency", type=int, default=50)
    parser.add_argument("--samples", type=int, default=300)
    parser.add_argument("--gap", type=float, default=0.005, help="seconds between latency jobs")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--sweep-jobs", type=int, help="jobs per no-op try (default: --jobs/4)")
    parser.add_argument("--no-sweep", action="store_true", help="first candidate setting only")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="3,000 no-op and 500 I/O jobs, 100 latency samples, one run, no sweep",
    )
    parser.add_argument(
        "--task-report",
        choices=["process", "redis"],
        default="process",
        help="how jobs report that they are done: counted in the worker process and written "
        "every 5 ms (default), or one Redis round trip per job",
    )
    parser.add_argument(
        "--workloads",
        default=",".join(WORKLOADS),
        help="which of noop, latency, io to measure (default: all three)",
    )
    parser.add_argument(
        "--store",
        choices=["redis", "sqlite"],
        default="redis",
        help="where the jobs go: a private Redis (default), or a fresh SQLite file per "
        f"measurement ({' and '.join(SQLITE_SYSTEMS)} only; reports still use Redis)",
    )
    parser.add_argument("--json", type=Path, help="also write every figure here")
    parser.add_argument("--timeout", type=float, default=600.0, help="bound on any one wait")
    args = parser.parse_args()
    os.environ["BENCH_REPORT"] = args.task_report  # read by apps/_common.py in every child
    if args.quick:
        args.jobs, args.io_jobs, args.samples, args.runs, args.no_sweep = 3_000, 500, 100, 1, True
    names = _systems(parser, args)
    started = time.monotonic()
    logs = Path(tempfile.mkdtemp(prefix="rota-peers-"))
    if args.store == "sqlite":
        os.environ[SQLITE_DIR] = str(logs)  # read by _queue_url in this process
    workloads = tuple(args.workloads.split(","))
    if set(workloads) - set(WORKLOADS):
        parser.error(f"unknown workloads: {args.workloads}; expected some of noop, latency, io")
    cfg = Config(
        args.jobs, args.io_jobs, args.sleep, args.io_concurrency, args.samples, args.gap,
        latency_budget=60.0, timeout=args.timeout, logs=logs, workloads=workloads,
    )  # fmt: skip
    outs = [Outcome(s) for s in SYSTEMS if s.name in names]
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
            for out in outs:
                run_once(out, cfg)
    finally:
        stop_all()
    command = "python bench/redis_peers/peers.py " + " ".join(sys.argv[1:])
    print("\n" + report(outs, cfg, args.runs, command.strip(), started))
    if args.json:
        raw = {o.system.name: {"runs": o.runs, "errors": o.errors} for o in outs}
        args.json.write_text(json.dumps(raw, indent=1))


if __name__ == "__main__":
    main()
