"""The sending side of one system, run by ``peers.py`` in that system's
interpreter (its own virtualenv). Prints one JSON object on stdout.

    python client.py SYSTEM prepare                       # the system's schema
    python client.py SYSTEM fill --jobs N                 # N no-op jobs
    python client.py SYSTEM fill --jobs N --sleep 0.05    # N I/O-bound jobs
    python client.py SYSTEM latency --samples 300 --gap 0.005 --budget 60

``latency`` sends one job at a time and waits for the task's start stamp (a
datagram to ``BENCH_STAMP_ADDR``): latency = the task's ``time.time()`` at
start - ``time.time()`` just before the send call. The first ``--warmup``
samples are dropped.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import inspect
import json
import socket
import time
from collections.abc import Awaitable, Callable
from types import ModuleType
from typing import Any

import _report

STAMP_TIMEOUT = 10.0


def _stamp_socket() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(_report.address("BENCH_STAMP_ADDR"))
    return sock


def _sample(started: bytes, sent: float) -> float:
    return (float(started) - sent) * 1000


def latency(module: ModuleType, args: argparse.Namespace) -> dict[str, Any]:
    sock = _stamp_socket()
    sock.settimeout(STAMP_TIMEOUT)
    deadline = time.monotonic() + args.budget
    samples: list[float] = []
    for i in range(args.warmup + args.samples):
        if time.monotonic() > deadline:
            break
        sent = time.time()
        module.send_stamp()
        sample = _sample(sock.recv(64), sent)
        if i >= args.warmup:
            samples.append(sample)
        time.sleep(args.gap)
    sock.close()
    return {"latency_ms": samples}


async def alatency(module: ModuleType, args: argparse.Namespace) -> dict[str, Any]:
    loop = asyncio.get_running_loop()
    sock = _stamp_socket()
    sock.setblocking(False)
    deadline = time.monotonic() + args.budget
    samples: list[float] = []
    for i in range(args.warmup + args.samples):
        if time.monotonic() > deadline:
            break
        sent = time.time()
        await module.send_stamp()
        reply = await asyncio.wait_for(loop.sock_recv(sock, 64), STAMP_TIMEOUT)
        sample = _sample(reply, sent)
        if i >= args.warmup:
            samples.append(sample)
        await asyncio.sleep(args.gap)
    sock.close()
    return {"latency_ms": samples}


def _fill_call(module: ModuleType, args: argparse.Namespace) -> Callable[[], Any]:
    if args.sleep is None:
        return lambda: module.send_noop(args.jobs)
    return lambda: module.send_sleep(args.jobs, args.sleep)


def run_sync(module: ModuleType, args: argparse.Namespace) -> dict[str, Any]:
    try:
        if args.action == "prepare":
            module.prepare()
            return {}
        if args.action == "fill":
            started = time.perf_counter()
            _fill_call(module, args)()
            return {"sent_per_s": args.jobs / (time.perf_counter() - started)}
        return latency(module, args)
    finally:
        module.teardown()


async def run_async(module: ModuleType, args: argparse.Namespace) -> dict[str, Any]:
    await module.setup()
    try:
        if args.action == "prepare":
            await module.prepare()
            return {}
        if args.action == "fill":
            started = time.perf_counter()
            sending: Awaitable[None] = _fill_call(module, args)()
            await sending
            return {"sent_per_s": args.jobs / (time.perf_counter() - started)}
        return await alatency(module, args)
    finally:
        await module.teardown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("system")
    parser.add_argument("action", choices=["prepare", "fill", "latency"])
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
