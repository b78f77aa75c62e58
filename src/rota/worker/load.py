"""Dispatch by load: a worker busier than an idle peer waits a little before
each claim, so that the idlest worker serving the same queues claims new
work first.

A worker's load is its process's share of the machine's CPU time over the
last second or so (1.0: every core busy with this worker). Each heartbeat
reports it, and each heartbeat the worker reads its peers' records: the
load of the idlest live peer that serves one of its queues, has a free
slot, found the queues short at its latest claim (fewer jobs than it asked
for) and is not stopping or holding back. A peer's jobs count claimed ones
still waiting for a slot, and a peer whose claims come back full has all
the work it asks for, so workers sharing a backlog are no idler peers to
each other, even when a heartbeat catches one between two claims: every
worker then claims as fast as it can.
Before each claim the worker then waits ``YIELD_AT_FULL_LOAD`` seconds
times how much busier it is than that peer, plus the time the store may
take to tell an idle worker of new work (its polling pace on MySQL; none
where the store pushes it), so that the peer has looked first (nothing
when no peer is idler by ``MIN_GAP`` or more, when it works alone, or when
it runs nothing: its load is then past work, and two idle workers each
reading the other's older, lower load would otherwise both wait): the
delay grows with the gap and never slows a worker that has no idler peer.

Apart from its peers, a worker started with ``--max-cpu`` or ``--max-mem``
claims nothing while its machine is over either (:class:`HostGate`).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterable

import psutil

from rota.models import WorkerInfo

log = logging.getLogger("rota.worker")

#: The wait before a claim of a worker busier than its idlest peer by the
#: whole machine (load 1.0 against 0.0); smaller gaps wait in proportion.
YIELD_AT_FULL_LOAD = 0.05
#: The least gap between two loads that makes the busier worker wait: a
#: smaller one is within what a second's reading of the CPU varies by.
MIN_GAP = 0.02


class LoadMeter:
    """This process's share of the machine's CPU time between two readings."""

    def __init__(
        self,
        process: psutil.Process | None = None,
        cores: int | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._process = process or psutil.Process()
        self._cores = cores or os.cpu_count() or 1
        self._clock = clock
        self._last = (clock(), self._cpu_seconds())

    def read(self) -> float:
        """The load since the last reading (since creation, the first time)."""
        now, cpu = self._clock(), self._cpu_seconds()
        then, before = self._last
        self._last = (now, cpu)
        if now <= then:
            return 0.0
        return max(0.0, min(1.0, (cpu - before) / ((now - then) * self._cores)))

    def _cpu_seconds(self) -> float:
        times = self._process.cpu_times()
        return float(times.user + times.system)


class HostGate:
    """The machine's CPU and memory use (percent, None before the first
    reading), and whether a worker holds back its claims because either is
    over its threshold (None: no threshold)."""

    def __init__(self, max_cpu: float | None, max_mem: float | None) -> None:
        self.max_cpu = max_cpu
        self.max_mem = max_mem
        self.cpu: float | None = None
        self.mem: float | None = None
        self.closed = False
        psutil.cpu_percent(interval=None)  # the first reading counts from here

    def read(self) -> bool:
        """Read the machine's use; True when the gate closes at this reading
        (it was open), which is logged, as its opening again is."""
        self.cpu = cpu = psutil.cpu_percent(interval=None)
        self.mem = mem = psutil.virtual_memory().percent
        over = (self.max_cpu is not None and cpu > self.max_cpu) or (
            self.max_mem is not None and mem > self.max_mem
        )
        was, self.closed = self.closed, over
        if over != was:
            log.warning(
                "host load cpu=%.0f%% mem=%.0f%%: %s claiming",
                cpu,
                mem,
                "holding back" if over else "resuming",
            )
        return over and not was


def idlest_peer_load(
    me: str, queues: Iterable[str], workers: Iterable[WorkerInfo], stale_after: float
) -> float | None:
    """The load of the idlest live peer of worker ``me`` that serves one of
    ``queues``, has a free slot and found the queues short at its latest
    claim; None when there is none. A record older than ``stale_after``
    seconds next to ``me``'s own is not live."""
    records = list(workers)
    mine = next((w for w in records if w.id == me), None)
    if mine is None:
        return None
    wanted = set(queues)
    loads = [
        w.load
        for w in records
        if w.id != me
        and w.load is not None
        and mine.heartbeat_at - w.heartbeat_at < stale_after
        and wanted.intersection(w.queues)
        and w.running < w.concurrency
        and w.claimed_short
        and not (w.stopping or w.holding_back)
    ]
    return min(loads, default=None)


def claim_delay(
    own: float, idlest_peer: float | None, running: int, wake_latency: float = 0.0
) -> float:
    """Seconds to wait before claiming, for a worker at load ``own`` that
    runs or holds ``running`` jobs, whose idlest peer is at ``idlest_peer``
    (None: no peer could take the work), on a store whose idle workers see
    new work within ``wake_latency`` seconds (``Store.wake_latency``: the
    idler peer must have had the time to see it). A worker running nothing
    never waits: every slot of it is free, and its load is past work; nor
    does one busier by less than :data:`MIN_GAP`. The wait is
    ``YIELD_AT_FULL_LOAD`` times the gap, plus the whole of ``wake_latency``:
    a part of it would leave to chance whether the peer looks first."""
    if idlest_peer is None or not running:
        return 0.0
    gap = min(1.0, own - idlest_peer)
    if gap < MIN_GAP:
        return 0.0
    return YIELD_AT_FULL_LOAD * gap + wake_latency
