"""rota on Redis against the Python task queues that run on Redis, side by side.

Celery, RQ, Dramatiq, Huey, taskiq, saq and arq each run in a virtualenv of
their own under ``bench/.peers-venv/`` (made on first use, never part of
rota's environment); rota runs from the interpreter that runs this script.
Each measurement gets two private ``redis-server``s without persistence on
free ports: one the system queues on, one for the bench's own bookkeeping (the
tasks' reports, the latency stamps, the script's polling), so that the first
serves only the system and the jobs' bodies. Three workloads:

1. no-op throughput: send ``--jobs`` no-op jobs (bulk where the library has
   it), start the worker, time until the last one is done;
2. enqueue-to-start latency with an idle worker: one job at a time, a few
   ms apart; latency = task start - send;
3. I/O-bound: ``--io-jobs`` jobs that sleep ``--sleep`` s at concurrency
   ``--io-concurrency``: jobs/s from the first start to the last end.

Every task reports the same way: a counter and the span of start and end
times, kept in the worker process and written to Redis every 5 ms by a
reporter thread (``apps/_common.py``). ``--body roundtrip`` gives the no-op
and I/O jobs one Redis round trip of their own (a pipelined ``INCR``).

Two profiles (``--profile``): ``best``, where each system's candidate worker
settings are tried once per workload before the measured runs and the best
kept (the fastest no-op drain, the lowest p50 latency on a third of the
samples, the fastest I/O run); and ``defaults``, each system at the settings
its docs tell a user to start, with one worker process per CPU.

Each workload also reports what it cost per job (``costs.py``): CPU time of
every process of the worker's process groups and of the queue's
redis-server between a reading just before the first job and one just after
the last, and the Redis commands the queue's server ran in that window.
Prints markdown::

    .venv/bin/python bench/redis_peers/peers.py                  # both profiles, 3 runs
    .venv/bin/python bench/redis_peers/peers.py --profile best   # about 15 minutes
    .venv/bin/python bench/redis_peers/peers.py --quick          # about 4 minutes
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
    compile_rota,
    ensure_venv,
    spawn,
    stop,
    stop_all,
    stop_on_signals,
)
from costs import BODY, Meter, Reading, per_job, top_commands  # noqa: E402  (beside this file)

APPS = HERE / "apps"
ROOT = HERE.parents[1]

DONE, SPAN = "bench:done", "bench:span"
STALL = 60.0  # seconds without a job done before a measurement is given up


WORKLOADS = ("noop", "latency", "io")
PROFILES = ("best", "defaults")
#: Worker processes in the ``defaults`` profile: one per CPU.
CORES = os.cpu_count() or 1
#: The systems that run on SQLite (``--store sqlite``), and where its files go.
SQLITE_SYSTEMS = ("rota", "huey")
SQLITE_DIR = "BENCH_SQLITE_DIR"


@dataclass(frozen=True)
class Setting:
    """One way to start a system's worker. ``{url}`` in ``argv`` is the Redis URL."""

    label: str
    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()
    copies: int = 1  # identical processes started side by side (each its own group)


@dataclass(frozen=True)
class System:
    name: str
    title: str
    packages: tuple[str, ...]  # pip requirements of its virtualenv; none for rota
    dists: tuple[str, ...]  # distributions whose versions are reported
    noop: Callable[[], list[Setting]]  # candidates; first: the last full run's pick, for --no-sweep
    io: Callable[[int], list[Setting]]  # candidates at a concurrency
    defaults: Callable[[int], Setting]  # what its docs start, with this many processes
    # what its docs start on SQLite, where they say otherwise (None: defaults)
    sqlite_defaults: Callable[[int], Setting] | None = None
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

# -- the "defaults" profile ---------------------------------------------------------
# Each system as its docs tell a user to start a worker, with n worker processes
# (one per CPU): pool kind, threads, concurrency and prefetch are left at their
# defaults. Only logging is turned down to warnings for every system, as in the
# "best" profile, so that no system writes a line per job.


def _rota_defaults(n: int) -> Setting:
    # README.md and `rota worker --help`: `rota worker APP --processes N|auto`
    # ("'auto' for one per CPU"); each process threads mode, --concurrency 8.
    argv = ("rota", "worker", "app_rota:app", "--url", "{url}", "--processes", str(n))
    return Setting(f"--processes {n} (threads, --concurrency 8)", (*argv, "--log-level", "warning"))


def _rota_sqlite_defaults(n: int) -> Setting:
    # README.md, "Workers": on SQLite one worker process per machine (one
    # writer at a time), so the command a user starts there is the plain one.
    argv = ("rota", "worker", "app_rota:app", "--url", "{url}", "--log-level", "warning")
    return Setting("one process (threads, --concurrency 8)", argv)


def _celery_defaults(n: int) -> Setting:
    # docs.celeryq.dev/en/stable/userguide/workers.html, "Concurrency": the prefork
    # pool, "the number of CPUs available on the machine" processes by default;
    # configuration.html#worker-prefetch-multiplier: 4 by default.
    argv = ("celery", "-A", "app_celery", "worker", "-c", str(n), "-l", "WARNING")
    return Setting(f"-c {n} (prefork, --prefetch-multiplier 4)", argv)


def _rq_defaults(n: int) -> Setting:
    # python-rq.org/docs/workers/: `rq worker` (the forking `Worker` class: a
    # work horse per job), one job at a time per worker; more workers for more.
    # A work horse exits after its one job, before a reporter thread of its
    # own could write, so each job reports itself (one more round trip).
    argv = ("rq", "worker", "-u", "{url}", "-q", "default")
    label = f"{n} x `rq worker` (forks a work horse per job; jobs report themselves)"
    return Setting(label, argv, (("BENCH_REPORT", "redis"),), copies=n)


def _dramatiq_defaults(n: int) -> Setting:
    # dramatiq.io/guide.html and `dramatiq --help`: one process per CPU core
    # (--processes) and 8 threads per process (--threads) by default.
    return Setting(f"--processes {n} (--threads 8)", ("dramatiq", "app_dramatiq", "-p", str(n)))


def _huey_defaults(n: int) -> Setting:
    # huey.readthedocs.io/en/latest/consumer.html: -w workers (default 1) of -k
    # type thread, process or greenlet; processes for more than one CPU.
    return Setting(
        f"-k process -w {n}",
        ("huey_consumer", "app_huey.huey", "-k", "process", "-w", str(n), "-q"),
    )


def _taskiq_defaults(n: int) -> Setting:
    # taskiq-python.github.io/guide/cli.html: `taskiq worker` with --workers
    # processes (2 by default) and --max-async-tasks 100; taskiq-redis's README
    # names RedisStreamBroker (acknowledged) first.
    argv = ("taskiq", "worker", "app_taskiq:broker", "--workers", str(n), "--log-level", "WARNING")
    return Setting(
        f"RedisStreamBroker, --workers {n} (--max-async-tasks 100)",
        argv,
        (("BENCH_TASKIQ_BROKER", "stream"),),
    )


def _saq_defaults(n: int) -> Setting:
    # saq's README, "Usage": `saq module.settings --workers N` (processes); a
    # worker's concurrency is 10 by default.
    return Setting(
        f"--workers {n} (concurrency 10)", ("saq", "app_saq.settings", "--workers", str(n))
    )


def _arq_defaults(n: int) -> Setting:
    # arq-docs.helpmanual.io: one worker per process (`arq module.WorkerSettings`),
    # max_jobs 10 and poll_delay 0.5 s by default; n processes side by side.
    return Setting(
        f"{n} x worker (max_jobs=10, poll_delay=0.5)", ("python", "app_arq.py"), copies=n
    )


SYSTEMS: tuple[System, ...] = (
    System(
        "rota", "**rota**", (), ("rota",),
        lambda: [_rota(m, n) for m in ("threads", "async") for n in (64, 32, 8)]
        + [_rota("processes", 2)],
        lambda c: [_rota("threads", c), _rota("async", c)],
        _rota_defaults,
        sqlite_defaults=_rota_sqlite_defaults,
    ),
    System(
        "celery", "Celery", ("celery[redis]==5.7.0", "gevent==26.9.0", "hiredis==3.5.0"),
        ("celery", "kombu", "redis"),
        lambda: [_celery("threads", 8, 16), _celery("solo", 1, 64), _celery("gevent", 64, 4),
                 _celery("prefork", 2, 64)],
        lambda c: [_celery("threads", c, 4), _celery("gevent", c, 4)], _celery_defaults,
        notes=("prefork starts child processes (one per `-c`); the others run in the worker "
               "process. Messages are acknowledged on receipt (Celery's default, no "
               "`acks_late`).",),
    ),
    System(
        "rq", "RQ", ("rq==3.0.0", "hiredis==3.5.0"), ("rq", "redis"),
        lambda: [_RQ], lambda c: [_RQ], _rq_defaults, noop_cap=5_000, io_cap=200,
        notes=("one job at a time per worker process (concurrency needs more processes, "
               "e.g. `rq worker-pool`), so its rates do not depend on the number of jobs: "
               "it runs at most 5,000 no-op jobs and 200 I/O jobs (concurrency 1, ceiling "
               "20 jobs/s) to keep the run short.",),
    ),
    System(
        "dramatiq", "Dramatiq", ("dramatiq[redis]==2.2.1", "hiredis==3.5.0"),
        ("dramatiq", "redis"),
        lambda: [_dramatiq(32), _dramatiq(8)], lambda c: [_dramatiq(c)], _dramatiq_defaults,
        notes=("an idle Redis consumer polls with a growing back-off up to the worker "
               "timeout (1 s by default), which shows in its latency.",),
    ),
    System(
        "huey", "Huey", ("huey==3.5.4", "redis", "hiredis==3.5.0"), ("huey", "redis"),
        lambda: [_huey(8), _huey(32), _huey(2, "process")], lambda c: [_huey(c)], _huey_defaults,
    ),
    System(
        "taskiq", "taskiq", ("taskiq==0.13.0", "taskiq-redis==1.2.4", "hiredis==3.5.0"),
        ("taskiq", "taskiq-redis", "redis"),
        lambda: [_taskiq("list", 100), _taskiq("stream", 100)],
        lambda c: [_taskiq("list", c), _taskiq("stream", c)], _taskiq_defaults,
        notes=("`ListQueueBroker` pops with `BRPOP` and never acknowledges: a job popped by "
               "a worker that dies is lost. `RedisStreamBroker` acknowledges after the task.",),
    ),
    System(
        "saq", "saq", ("saq[redis]==0.26.4", "hiredis==3.5.0", "typing_extensions"),
        ("saq", "redis"),
        lambda: [_saq(100), _saq(10)], lambda c: [_saq(c)], _saq_defaults,
    ),
    System(
        "arq", "arq", ("arq==0.28.0", "hiredis==3.5.0"), ("arq", "redis"),
        lambda: [_arq(500, 0.01), _arq(100, 0.01), _arq(10, 0.5)],
        lambda c: [_arq(c, 0.01)], _arq_defaults,
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


@dataclass(frozen=True)
class Servers:
    """The two private Redis servers of one measurement."""

    queue: redis.Redis  # the system queues here; the jobs' own round trips go here too
    reports: redis.Redis  # the tasks' reports and stamps, and this script's polling


@contextlib.contextmanager
def servers() -> Iterator[Servers]:
    """A queue server and a report server, for one measurement."""
    with redis_server() as queue, redis_server() as reports:
        yield Servers(queue, reports)


def _url(server: redis.Redis) -> str:
    return f"redis://127.0.0.1:{server.connection_pool.connection_kwargs['port']}/0"


def _queue_url(run: Servers) -> str:
    """Where the jobs of the measurement go: the queue server, or with ``--store
    sqlite`` a fresh SQLite file (named after the queue server's port)."""
    folder = os.environ.get(SQLITE_DIR)
    if folder is None:
        return _url(run.queue)
    return f"sqlite:///{folder}/rota-{run.queue.connection_pool.connection_kwargs['port']}.db"


def _env(system: System, run: Servers, setting: Setting | None = None) -> dict[str, str]:
    queue = _queue_url(run)
    env = os.environ | {
        "BENCH_REDIS_URL": _url(run.reports),
        "BENCH_QUEUE_URL": _url(run.queue),
        "ROTA_URL": queue,
        # the apps, then the caller's PYTHONPATH (another checkout's src/, in turns)
        "PYTHONPATH": os.pathsep.join(filter(None, [str(APPS), os.environ.get("PYTHONPATH")])),
    }
    if queue.startswith("sqlite:///"):  # Huey's own file beside rota's
        path = Path(queue.removeprefix("sqlite:///"))
        env["BENCH_SQLITE_PATH"] = str(path.with_name(path.name.replace("rota-", "huey-")))
    env.pop("VIRTUAL_ENV", None)
    return env | dict(setting.env if setting else ())


def _python(system: System) -> str:
    return str(system.bin / "python") if system.packages else sys.executable


def client(
    system: System, setting: Setting, run: Servers, *args: str, timeout: float
) -> dict[str, Any]:
    """Run ``apps/client.py`` in the system's interpreter, with the worker's environment
    (a setting may change how jobs are sent); its JSON answer."""
    argv = [_python(system), str(APPS / "client.py"), system.name, *args]
    env = _env(system, run, setting)
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
    system: System, setting: Setting, run: Servers, logs: Path
) -> Iterator[list[subprocess.Popen[bytes]]]:
    """The system's worker processes (``setting.copies`` of them, each in its own
    process group), started with ``setting``, for the block."""
    url = _queue_url(run)
    argv = [a.replace("{url}", url) for a in setting.argv]
    argv[0] = str(system.bin / argv[0]) if argv[0] != "python" else _python(system)
    path = logs / f"{system.name}-{time.time_ns()}.log"
    log = path.open("wb")
    env = _env(system, run, setting)
    procs: list[subprocess.Popen[bytes]] = []
    try:
        for _ in range(setting.copies):
            procs.append(spawn(argv, cwd=APPS, env=env, stdout=log, stderr=subprocess.STDOUT))
        yield procs
    except BenchError as exc:
        raise BenchError(f"{exc} (worker log: {path})") from None
    finally:
        for proc in procs:
            stop(proc)
        log.close()


@dataclass(frozen=True)
class Drain:
    """How a drain went: (first start, last end) as ``time.time()``, and the
    readings of its costs just before the first job reported and after the last."""

    first: float
    last: float
    before: Reading
    after: Reading


def wait_done(
    run: Servers, total: int, procs: list[subprocess.Popen[bytes]], timeout: float
) -> Drain:
    """Block until ``total`` jobs reported.

    Reads the costs (:class:`costs.Meter`) at every poll until the first job
    reports (the last such reading is the drain's start), and once at the end.
    Gives up after ``timeout`` seconds, or STALL seconds without progress."""
    meter = Meter(run.queue, [p.pid for p in procs])
    started = time.monotonic()
    progress, last = started, 0
    before = meter.read()
    while (done := _done(run.reports)) < total:
        now = time.monotonic()
        if done != last:
            progress, last = now, done
        if done == 0:
            before = meter.read()
        if exited := [p for p in procs if p.poll() is not None]:
            code = exited[0].returncode
            raise BenchError(f"a worker process exited (code {code}) after {done} jobs")
        if now - started > timeout or now - progress > STALL:
            bodies = int(run.queue.get(BODY) or 0)
            raise BenchError(
                f"{done} of {total} jobs done after {now - started:.0f} s "
                f"({bodies} round-trip bodies ran)"
            )
        time.sleep(0.01)
    after = meter.read()
    return Drain(*_span(run.reports), before, after)


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
    roundtrip: bool = False  # whether each job does a round trip of its own (--body)
    sqlite: bool = False  # the queue is a SQLite file (--store sqlite), not Redis


def _fill(
    system: System, setting: Setting, run: Servers, jobs: int, cfg: Config, sleep: float
) -> dict[str, float]:
    """Send ``jobs`` jobs (no-op, or I/O-bound if ``sleep``); the sending rate and the
    queue server's commands per job sent."""
    args = ["fill", "--jobs", str(jobs)] + (["--sleep", str(sleep)] if sleep else [])
    meter = Meter(run.queue, [])
    before = meter.read()
    sent: float = client(system, setting, run, *args, timeout=cfg.timeout)["sent_per_s"]
    commands = per_job(before, meter.read(), jobs, "send")["send_commands"]
    return {"sent_per_s": sent, "send_commands": commands}


def _drain_costs(
    run: Servers, drain: Drain, jobs: int, cfg: Config, prefix: str
) -> dict[str, float]:
    """What the drain cost per job. With round-trip bodies the jobs in the window are
    counted exactly (the bodies' counter is read with each reading); else all of them."""
    if cfg.roundtrip:
        ran = int(run.queue.get(BODY) or 0)
        if ran < jobs:
            raise BenchError(f"{ran} job bodies ran their round trip, of {jobs} jobs")
        jobs = drain.after.bodies - drain.before.bodies
    return per_job(drain.before, drain.after, jobs, prefix)


def measure_noop(system: System, setting: Setting, cfg: Config, jobs: int) -> dict[str, float]:
    """Send ``jobs`` no-op jobs, then start the worker and time the drain."""
    jobs = min(jobs, system.noop_cap or jobs)
    figures: dict[str, float] = {}
    with servers() as run:
        sent = _fill(system, setting, run, jobs, cfg, 0.0)
        figures["sent_per_s"] = sent["sent_per_s"]
        figures["noop_send_commands"] = sent["send_commands"]
        spawned = time.time()
        with worker(system, setting, run, cfg.logs) as procs:
            drain = wait_done(run, jobs, procs, cfg.timeout)
            figures["noop_per_s"] = jobs / (drain.last - spawned)
            figures["steady_per_s"] = jobs / (drain.last - drain.first)
            figures |= _drain_costs(run, drain, jobs, cfg, "noop")
    return figures


def measure_latency(
    system: System, setting: Setting, cfg: Config, samples: int
) -> dict[str, float]:
    """Enqueue-to-start latency with an idle worker: ``samples`` jobs sent one
    at a time (after the client's warm-up jobs). Its costs: from the end of a
    first client's ten warm-up jobs (the worker is up) to the end of the run."""
    timeout = cfg.latency_budget + 60
    with servers() as run, worker(system, setting, run, cfg.logs) as procs:
        meter = Meter(run.queue, [p.pid for p in procs])
        client(system, setting, run, "latency", "--samples", "0", "--warmup", "10", timeout=timeout)
        before = meter.read()
        args = ["latency", "--samples", str(samples), "--gap", str(cfg.gap)]
        args += ["--budget", str(cfg.latency_budget)]
        answer = client(system, setting, run, *args, timeout=timeout)
        after = meter.read()
    found = sorted(answer["latency_ms"])
    if not found:
        raise BenchError("no latency sample")
    figures = {"samples": float(len(found))}
    for p in (50, 95, 99):
        figures[f"p{p}_ms"] = found[min(len(found) - 1, len(found) * p // 100)]
    return figures | per_job(before, after, int(answer.get("sent", len(found))), "latency")


def measure_io(system: System, setting: Setting, cfg: Config) -> dict[str, float]:
    jobs = min(cfg.io_jobs, system.io_cap or cfg.io_jobs)
    with servers() as run:
        sent = _fill(system, setting, run, jobs, cfg, cfg.sleep)
        spawned = time.time()
        with worker(system, setting, run, cfg.logs) as procs:
            drain = wait_done(run, jobs, procs, cfg.timeout)
            costs = _drain_costs(run, drain, jobs, cfg, "io")
    return {
        "io_per_s": jobs / (drain.last - drain.first),
        "io_from_start_per_s": jobs / (drain.last - spawned),
        "io_send_commands": sent["send_commands"],
    } | costs


@dataclass
class Outcome:
    system: System
    profile: str = "best"  # or "defaults"
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

    @property
    def name(self) -> str:
        """The system's name, and the profile unless it is ``best``."""
        return self.system.name + ("" if self.profile == "best" else f"/{self.profile}")


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
        print(f"  {out.name:9} {kind:7} {setting.label:50} {shown:>13}", flush=True)
        if best is None or (value < best[0] if lowest else value > best[0]):
            best = (value, setting)
    return best[1] if best else None


def choose(out: Outcome, cfg: Config, sweep_jobs: int, sweep: bool) -> None:
    """Each asked-for workload's setting: the best candidate, or the first without a
    sweep; in the ``defaults`` profile, the system's defaults with one process per CPU."""
    system = out.system
    if out.profile == "defaults":
        defaults = (cfg.sqlite and system.sqlite_defaults) or system.defaults
        for workload in cfg.workloads:
            setattr(out, f"{workload}_setting", defaults(CORES))
        return
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
        print(f"  {out.name}: {exc}", flush=True)
    if figures:
        out.runs.append(figures)
        shown = "  ".join(f"{k}={v:,.1f}" for k, v in figures.items() if ":" not in k)
        print(f"  {out.name:9} {shown}", flush=True)


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

PROFILE_TITLES = {
    "best": "Best settings (each system's fastest candidate per workload)",
    "defaults": f"Default settings, one worker process per CPU ({CORES})",
}


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


def _figures(outs: list[Outcome], cfg: Config, best: dict[str, float | None]) -> list[str]:
    defaults = all(o.profile == "defaults" for o in outs)
    concurrency = "each system's default concurrency" if defaults else "concurrency "
    concurrency += "" if defaults else str(cfg.io_concurrency)
    lines = [
        f"| system | no-op, {cfg.jobs:,} jobs: worker start → all done (jobs/s) "
        "| no-op, first start → last end (jobs/s) | latency p50 (ms) | p95 (ms) | p99 (ms) "
        f"| I/O, {cfg.io_jobs:,} jobs of {cfg.sleep * 1000:.0f} ms, {concurrency} (jobs/s) |",
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
    return lines


def _cpu_cell(o: Outcome, workload: str, best: float | None) -> str:
    workers, server = o.median(f"{workload}_cpu_workers_us"), o.median(f"{workload}_cpu_server_us")
    total = o.median(f"{workload}_cpu_us")
    if workers is None or server is None or total is None:
        return "n/a"
    return f"{workers:,.0f} + {server:,.0f} = {_cell(total, best)}"


def _commands_cell(o: Outcome, workload: str) -> str:
    total = o.median(f"{workload}_commands")
    if total is None:
        return "n/a"
    medians = {k: v for k in o.runs[0] if (v := o.median(k)) is not None} if o.runs else {}
    top = ", ".join(f"{name} {n:.2f}" for name, n in top_commands(medians, workload))
    return f"{total:.2f} ({top})" if top else f"{total:.2f}"


def _costs(outs: list[Outcome], cfg: Config) -> list[str]:
    measured = [w for w in cfg.workloads if any(o.median(f"{w}_cpu_us") for o in outs)]
    if not measured:
        return []
    names = {"noop": "no-op", "latency": "latency", "io": "I/O"}
    head = "| system | " + " | ".join(
        f"{names[w]}: CPU µs/job, workers + redis-server | {names[w]}: Redis commands/job"
        for w in measured
    )
    lines = [head + " |", "|---|" + "---:|---|" * len(measured)]
    for o in outs:
        cells = [o.system.title]
        for w in measured:
            best = _best_peer(outs, f"{w}_cpu_us", False)
            cells += [_cpu_cell(o, w, best), _commands_cell(o, w)]
        lines.append("| " + " | ".join(cells) + " |")
    return [
        "",
        "What a job cost (median of the runs): CPU time of every worker process and of the "
        "queue's redis-server, from just before the first job to just after the last, per job "
        "(in brackets, the ratio to the lowest peer's); Redis commands the queue's server ran "
        "in that window per job (the most called in brackets).",
        "",
        *lines,
    ]


def _settings(outs: list[Outcome], cfg: Config) -> list[str]:
    lines = [
        "| system | profile | versions | no-op worker | latency worker | I/O worker |",
        "|---|---|---|---|---|---|",
    ]
    for o in outs:
        found = ", ".join(f"{k} {v}" for k, v in o.versions.items())
        settings = (o.noop_setting, o.latency_setting, o.io_setting)
        chosen = [
            f"`{s.label}`" if s else "none worked" if kind in cfg.workloads else "not run"
            for kind, s in zip(WORKLOADS, settings, strict=True)
        ]
        lines.append(f"| {o.system.title} | {o.profile} | {found} | " + " | ".join(chosen) + " |")
    return lines


def report(outs: list[Outcome], cfg: Config, runs: int, command: str, started: float) -> str:
    body = "one Redis round trip of its own (a pipelined INCR)" if cfg.roundtrip else "no I/O"
    lines = [
        f"Median of {runs} run(s); in brackets, the ratio to the best peer (rota excluded). "
        f"No-op and I/O job bodies: {body}.",
    ]
    for profile in PROFILES:
        group = [o for o in outs if o.profile == profile]
        if not group:
            continue
        best = {
            "noop_per_s": _best_peer(group, "noop_per_s", True),
            "steady_per_s": _best_peer(group, "steady_per_s", True),
            "p50_ms": _best_peer(group, "p50_ms", False),
            "io_per_s": _best_peer(group, "io_per_s", True),
            "noop_cpu_us": _best_peer(group, "noop_cpu_us", False),
        }
        lines += ["", f"### {PROFILE_TITLES[profile]}", "", *_figures(group, cfg, best)]
        lines += _costs(group, cfg)
        lines += ["", *_targets(group, best)]
    lines += ["", *_settings(outs, cfg)]
    tried = [(o, kind, s, r) for o in outs for kind, s, r in o.tried]
    if tried:
        lines += ["", "Settings tried (one run each; the best was kept):", ""]
        lines += ["| system | workload | setting | result |", "|---|---|---|---:|"]
        lines += [f"| {o.system.title} | {k} | `{s.label}` | {r} |" for o, k, s, r in tried]
    notes = [
        (o.system.title, n) for o in outs if o.profile == outs[0].profile for n in o.system.notes
    ]
    notes += [(f"{o.system.title} ({o.profile})", f"error: {e}") for o in outs for e in o.errors]
    if notes:
        lines += ["", "Notes:", ""] + [f"- {title}: {note}" for title, note in notes]
    minutes = (time.monotonic() - started) / 60
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    lines += ["", f"Machine: {machine()}; load average at the end {load}; took {minutes:.1f} min."]
    lines += ["", f"Command: `{command}`"]
    return "\n".join(lines)


def _targets(outs: list[Outcome], best: dict[str, float | None]) -> list[str]:
    """rota against the speed issue's targets, within one profile."""
    rota = next((o for o in outs if o.system.name == "rota"), None)
    if rota is None or not any(best.values()):
        return []
    noop, cpu, io = rota.median("noop_per_s"), rota.median("noop_cpu_us"), rota.median("io_per_s")
    p50, p99 = rota.median("p50_ms"), rota.median("p99_ms")
    checks = []
    if noop is not None and best["noop_per_s"]:
        ratio = noop / best["noop_per_s"]
        checks.append(f"no-op throughput ≥ 2x best peer: {ratio:.2f}x ({_ok(ratio >= 2)})")
    if cpu is not None and best["noop_cpu_us"]:
        ratio = cpu / best["noop_cpu_us"]
        checks.append(f"no-op CPU per job ≤ 0.5x best peer's: {ratio:.2f}x ({_ok(ratio <= 0.5)})")
    if p50 is not None and p99 is not None and best["p50_ms"]:
        ok = p50 <= best["p50_ms"] and p99 < 3
        checks.append(
            f"p50 ≤ best peer's and p99 < 3 ms: {p50:.2f} vs {best['p50_ms']:.2f} ms, "
            f"p99 {p99:.2f} ms ({_ok(ok)})"
        )
    if io is not None and rota.profile == "best":  # at --io-concurrency; defaults differ
        ok = io >= 950 and (best["io_per_s"] is None or io > best["io_per_s"])
        checks.append(f"I/O-bound ≥ 950 jobs/s and ahead of every peer: {io:,.0f} ({_ok(ok)})")
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


def _parser() -> argparse.ArgumentParser:
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
        "every 5 ms (default), or one Redis round trip per job to the report Redis (a job's "
        "own round trip to the queue's Redis is --body roundtrip)",
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
    parser.add_argument(
        "--body",
        choices=["noop", "roundtrip"],
        default="noop",
        help="what a no-op or I/O job does besides its report: nothing (default), or one Redis "
        "round trip of its own, a pipelined INCR on the queue's Redis, the same for every system",
    )
    parser.add_argument(
        "--profile",
        choices=[*PROFILES, "both"],
        default="both",
        help="best: each system's best candidate settings (the sweep); defaults: each system "
        "as its docs start it, one worker process per CPU; both (default)",
    )
    parser.add_argument("--json", type=Path, help="also write every figure here")
    parser.add_argument("--timeout", type=float, default=600.0, help="bound on any one wait")
    return parser


def main() -> None:
    parser = _parser()
    args = parser.parse_args()
    os.environ["BENCH_REPORT"] = args.task_report  # read by apps/_common.py in every child
    os.environ["BENCH_BODY"] = args.body  # read by apps/_common.py in every child
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
        roundtrip=args.body == "roundtrip", sqlite=args.store == "sqlite",
    )  # fmt: skip
    profiles = PROFILES if args.profile == "both" else (args.profile,)
    outs = [Outcome(s, p) for p in profiles for s in SYSTEMS if s.name in names]
    compile_rota()  # (each peer's packages were compiled as pip installed them)
    stop_on_signals()  # so that the finally below stops every child
    try:
        found: dict[str, dict[str, str]] = {}
        for out in outs:
            if out.system.name not in found:
                ensure_venv(out.system.name, out.system.packages)
                found[out.system.name] = versions(out.system)
            out.versions = found[out.system.name]
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
        raw: dict[str, dict[str, Any]] = {p: {} for p in profiles}
        for o in outs:
            chosen = {w: s.label for w in WORKLOADS if (s := getattr(o, f"{w}_setting"))}
            raw[o.profile][o.system.name] = {"runs": o.runs, "errors": o.errors, "settings": chosen}
        args.json.write_text(json.dumps(raw, indent=1))


if __name__ == "__main__":
    main()
