"""The sending side of one system, run by ``peers.py`` in that system's
interpreter (its own virtualenv). Prints one JSON object on stdout.

    python client.py SYSTEM fill --jobs N                 # N no-op jobs
    python client.py SYSTEM fill --jobs N --sleep 0.05    # N I/O-bound jobs
    python client.py SYSTEM latency --samples 300 --gap 0.005 --budget 60

``latency`` sends one job at a time and waits for the task's start stamp:
latency = the task's ``time.time()`` at start - ``time.time()`` just before the
send call. The first ``--warmup`` samples are dropped; ``sent`` counts every
job sent, warm-up included.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import inspect
import json
import time
from types import ModuleType
from typing import Any

import _common
import redis
import redis.asyncio

STAMP_TIMEOUT = 10


def _hook(module: ModuleType, name: str) -> Any:
    return getattr(module, name, None)


def fill(module: ModuleType, jobs: int, sleep: float | None) -> dict[str, float]:
    started = time.perf_counter()
    if sleep is None:
        module.send_noop(jobs)
    else:
        module.send_sleep(jobs, sleep)
    return {"sent_per_s": jobs / (time.perf_counter() - started)}


async def afill(module: ModuleType, jobs: int, sleep: float | None) -> dict[str, float]:
    started = time.perf_counter()
    if sleep is None:
        await module.send_noop(jobs)
    else:
        await module.send_sleep(jobs, sleep)
    return {"sent_per_s": jobs / (time.perf_counter() - started)}


def _stamp_of(reply: Any) -> float:
    if reply is None:
        raise SystemExit(f"no job started within {STAMP_TIMEOUT} s")
    return float(reply[1])


def latency(module: ModuleType, args: argparse.Namespace) -> dict[str, Any]:
    stamps = redis.Redis.from_url(_common.url())
    deadline = time.monotonic() + args.budget
    samples: list[float] = []
    count = 0
    for i in range(args.warmup + args.samples):
        if time.monotonic() > deadline:
            break
        sent = time.time()
        module.send_stamp()
        count += 1
        started = _stamp_of(stamps.blpop([_common.STAMPS], timeout=STAMP_TIMEOUT))
        if i >= args.warmup:
            samples.append((started - sent) * 1000)
        time.sleep(args.gap)
    stamps.close()
    return {"latency_ms": samples, "sent": count}


async def alatency(module: ModuleType, args: argparse.Namespace) -> dict[str, Any]:
    stamps = redis.asyncio.Redis.from_url(_common.url())
    deadline = time.monotonic() + args.budget
    samples: list[float] = []
    count = 0
    for i in range(args.warmup + args.samples):
        if time.monotonic() > deadline:
            break
        sent = time.time()
        await module.send_stamp()
        count += 1
        reply = await stamps.blpop([_common.STAMPS], timeout=STAMP_TIMEOUT)
        started = _stamp_of(reply)
        if i >= args.warmup:
            samples.append((started - sent) * 1000)
        await asyncio.sleep(args.gap)
    await stamps.aclose()
    return {"latency_ms": samples, "sent": count}


def run_sync(module: ModuleType, args: argparse.Namespace) -> dict[str, Any]:
    if (setup := _hook(module, "setup")) is not None:
        setup()
    try:
        if args.action == "fill":
            return fill(module, args.jobs, args.sleep)
        return latency(module, args)
    finally:
        if (teardown := _hook(module, "teardown")) is not None:
            teardown()


async def run_async(module: ModuleType, args: argparse.Namespace) -> dict[str, Any]:
    if (setup := _hook(module, "setup")) is not None:
        await setup()
    try:
        if args.action == "fill":
            return await afill(module, args.jobs, args.sleep)
        return await alatency(module, args)
    finally:
        if (teardown := _hook(module, "teardown")) is not None:
            await teardown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("system")
    parser.add_argument("action", choices=["fill", "latency"])
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--sleep", type=float, default=None)
    parser.add_argument("--samples", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--gap", type=float, default=0.005)
    parser.add_argument("--budget", type=float, default=60.0)
    args = parser.parse_args()
    module = importlib.import_module(f"app_{args.system}")
    if inspect.iscoroutinefunction(module.send_stamp):
        result = asyncio.run(run_async(module, args))
    else:
        result = run_sync(module, args)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
