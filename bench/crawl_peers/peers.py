"""rota.crawl against Scrapy with scrapy-redis: pages a second over one local
site, the same number of crawling processes each, politeness off.

For each run and system: a private redis-server (the frontier: rota's store,
or scrapy-redis's queue and duplicate filter), the site (``served_site.py``:
HOSTS hosts of PAGES pages in one uvicorn process), and PROCESSES crawling
processes: ``rota worker app_rota.py:app --concurrency C`` (threads), or
``scrapy runspider spider_scrapy.py`` with CONCURRENT_REQUESTS = C, in a
virtualenv of its own under ``bench/.peers-venv/scrapy``. The seeds are each
host's root. A run ends when the site has answered every page, and is given
up after ``--timeout`` seconds.

Reported per system, median of the runs: pages a second from the site's
first page answer to its last (``crawl``) and from the processes' start to
the last answer (``start to end``, start-up included), pages fetched more
than once, and CPU seconds per 1,000 pages (crawling processes and their
children, and the redis-server; the site's own CPU is left out).

    .venv/bin/python bench/crawl_peers/peers.py               # 3 runs, about 5 minutes
    .venv/bin/python bench/crawl_peers/peers.py --hosts 4 --pages 250 --runs 1
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import statistics
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from _peer_procs import (
    VENVS,
    BenchError,
    compile_rota,
    ensure_venv,
    redis_server,
    spawn,
    stop,
    stop_all,
    stop_on_signals,
)

HERE = Path(__file__).resolve().parent
SCRAPY_PACKAGES = ("scrapy==2.11.2", "scrapy-redis==0.9.1", "w3lib==2.1.2", "Twisted==24.3.0")
SYSTEMS = ("rota", "scrapy")


@contextmanager
def serving(hosts: int, pages: int, folder: Path) -> Iterator[list[int]]:
    """The site, for the block; yields its ports."""
    ports_file = folder / f"ports-{time.time_ns()}"
    argv = [sys.executable, str(HERE / "served_site.py"), "--hosts", str(hosts)]
    proc = spawn([*argv, "--pages", str(pages), "--ports-file", str(ports_file)])
    try:
        deadline = time.monotonic() + 30
        while not ports_file.exists() or len(ports_file.read_text().split()) < hosts:
            if time.monotonic() > deadline or proc.poll() is not None:
                raise BenchError("the site did not start")
            time.sleep(0.05)
        yield [int(p) for p in ports_file.read_text().split()]
    finally:
        stop(proc)


def site_stats(port: int) -> dict[str, Any]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stats", timeout=10) as answer:
        return dict(json.load(answer))


def crawlers(system: str, n: int, concurrency: int, env: dict[str, str], logs: Path) -> list[Any]:
    """Start ``n`` crawling processes of ``system``."""
    if system == "rota":
        rota = str(Path(sys.executable).with_name("rota"))
        argv = [rota, "worker", f"{HERE / 'app_rota.py'}:app", "--queues", "crawl"]
        argv += ["--concurrency", str(concurrency), "--log-level", "WARNING"]
    else:
        scrapy = str(VENVS / "scrapy" / "bin" / "scrapy")
        argv = [scrapy, "runspider", str(HERE / "spider_scrapy.py")]
    started = []
    for i in range(n):
        log = open(logs / f"{system}-{i}-{time.time_ns()}.log", "wb")  # noqa: SIM115
        started.append(spawn(argv, env=env, stdout=log, stderr=log, cwd=HERE))
        log.close()
    return started


def send_seeds(env: dict[str, str]) -> None:
    """rota: send the seeds through the crawler, as a user would."""
    saved = dict(os.environ)
    os.environ.update(env)
    try:
        name = f"app_rota_{time.time_ns()}"
        spec = importlib.util.spec_from_file_location(name, HERE / "app_rota.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        module.crawler.start()
        module.app.close()
    finally:
        os.environ.clear()
        os.environ.update(saved)


def cpu_seconds(procs: list[Any]) -> float:
    """CPU time used so far by ``procs`` and their live children."""
    total = 0.0
    for proc in procs:
        try:
            parent = psutil.Process(proc.pid)
            for member in [parent, *parent.children(recursive=True)]:
                times = member.cpu_times()
                total += times.user + times.system
        except psutil.NoSuchProcess:
            continue
    return total


def redis_cpu(url: str) -> float:
    import redis

    client = redis.Redis.from_url(url)
    try:
        info = client.info("cpu")
        return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])
    finally:
        client.close()


def measure(system: str, args: argparse.Namespace, logs: Path) -> dict[str, float]:
    """One crawl of the site by ``system``."""
    with redis_server() as url, serving(args.hosts, args.pages, logs) as ports:
        seeds = [f"http://127.0.0.1:{port}/" for port in ports]
        env = os.environ | {
            "ROTA_URL": url,
            "BENCH_REDIS_URL": url,
            "BENCH_SEEDS": json.dumps(seeds),
            "BENCH_CONCURRENCY": str(args.concurrency),
        }
        env.pop("VIRTUAL_ENV", None)
        started = time.time()
        procs = crawlers(system, args.processes, args.concurrency, env, logs)
        try:
            if system == "rota":
                send_seeds(env)
            total = site_stats(ports[0])["total"]
            deadline = time.monotonic() + args.timeout
            cpu_before = redis_cpu(url)
            while (stats := site_stats(ports[0]))["pages"] < total:
                where = f"{system}: {stats['pages']} of {total} pages"
                if time.monotonic() > deadline:
                    raise BenchError(f"{where} after {args.timeout} s")
                if all(p.poll() is not None for p in procs):
                    raise BenchError(f"{where} when every process had exited")
                time.sleep(0.1)
            cpu = cpu_seconds(procs) + redis_cpu(url) - cpu_before
        finally:
            for proc in procs:
                stop(proc)
    crawl = stats["last"] - stats["first"]
    return {
        "pages": total,
        "crawl_pages_per_s": total / crawl,
        "start_pages_per_s": total / (stats["last"] - started),
        "duplicates": stats["fetches"] - stats["pages"],
        "cpu_s_per_1000": 1000 * cpu / total,
    }


def report(results: dict[str, list[dict[str, float]]], args: argparse.Namespace) -> str:
    def median(system: str, key: str) -> float:
        return statistics.median(run[key] for run in results[system])

    lines = [
        f"Median of {args.runs} run(s); {args.hosts} hosts x {args.pages + 1} pages, "
        f"{args.processes} processes x {args.concurrency} at once, politeness off.",
        "",
        "| system | pages/s, crawl | pages/s, start to end | fetched twice "
        "| CPU s per 1,000 pages |",
        "|---|---:|---:|---:|---:|",
    ]
    for system in results:
        name = "**rota**" if system == "rota" else "Scrapy + scrapy-redis"
        lines.append(
            f"| {name} | {median(system, 'crawl_pages_per_s'):,.0f} "
            f"| {median(system, 'start_pages_per_s'):,.0f} "
            f"| {median(system, 'duplicates'):,.0f} | {median(system, 'cpu_s_per_1000'):.2f} |"
        )
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    lines += [
        "",
        f"Machine: {os.cpu_count()} CPUs, Python {platform.python_version()}, "
        f"Scrapy side: {' '.join(SCRAPY_PACKAGES)}; load average at the end {load}.",
        f"Command: `python bench/crawl_peers/peers.py {' '.join(sys.argv[1:])}`",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--systems", default=",".join(SYSTEMS))
    parser.add_argument("--hosts", type=int, default=10)
    parser.add_argument("--pages", type=int, default=1_999, help="pages per host besides /")
    parser.add_argument("--processes", type=int, default=2, help="crawling processes per system")
    parser.add_argument("--concurrency", type=int, default=32, help="fetches at once per process")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=600.0, help="bound on one crawl")
    parser.add_argument("--json", type=Path, help="also write every figure here")
    args = parser.parse_args()
    systems = args.systems.split(",")
    if set(systems) - set(SYSTEMS):
        parser.error(f"unknown systems: {args.systems}; expected some of {', '.join(SYSTEMS)}")
    if "scrapy" in systems:
        ensure_venv("scrapy", SCRAPY_PACKAGES)
    compile_rota()  # (each peer's packages were compiled as pip installed them)
    stop_on_signals()
    logs = Path(tempfile.mkdtemp(prefix="rota-crawl-peers-"))
    print(f"process logs in {logs}", flush=True)
    results: dict[str, list[dict[str, float]]] = {s: [] for s in systems}
    try:
        for run in range(args.runs):
            for system in systems if run % 2 == 0 else reversed(systems):
                figures = measure(system, args, logs)
                results[system].append(figures)
                shown = "  ".join(f"{k}={v:,.2f}" for k, v in figures.items())
                print(f"run {run + 1}, {system}: {shown}", flush=True)
    finally:
        stop_all()
    print()
    print(report(results, args))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
