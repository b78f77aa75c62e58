"""Flow control with real ``rota worker`` processes: limits hold cluster-wide.

Concurrency limits (also changed at run time), rate limits, fairness between
a big site and many small ones, blocked jobs staying queued, uniqueness under
concurrent senders, circuit breakers, and the host load gate. Jobs record
when and in which process they ran (``apps/flow.py``); the store's own
``started_at`` gives claim times.
"""

from __future__ import annotations

import itertools
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import pytest

from helpers import APPS, appended_lines, load_test_app, wait_for
from rota import App, Rate
from rota.models import Job, JobQuery, JobState, LimitInfo
from rota.stores import Store

WORKERS = 3


flow = load_test_app("flow")


class Rota(Protocol):
    """The ``processes`` fixture (tests/integration/conftest.py)."""

    def rota(self, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]: ...


@dataclass(frozen=True)
class Run:
    """One execution, as the task recorded it."""

    start: float
    end: float
    pid: int
    job_id: str
    attempt: int
    key: str


class Lab:
    """The workers, the log they write, and an app to send with."""

    def __init__(
        self, url: str, store: Store, processes: Rota, app_spec: str, tmp_path: Path
    ) -> None:
        self.url = url
        self.store = store
        self.processes = processes
        self.app_spec = app_spec
        self.log = tmp_path / "runs.log"
        self.log.touch()
        self.failing = tmp_path / "failing"
        self.failing.mkdir()
        self.sender: App = flow.sender(url)

    def worker(self, *options: str, concurrency: int = 6) -> subprocess.Popen[bytes]:
        env = {"ROTA_TEST_LOG": str(self.log), "ROTA_TEST_FAILING": str(self.failing)}
        return self.processes.rota(
            "worker", self.app_spec, "--url", self.url, "--concurrency", str(concurrency),
            "--log-level", "WARNING", *options, env=env,
        )  # fmt: skip

    def workers(self, n: int = WORKERS, concurrency: int = 6) -> list[subprocess.Popen[bytes]]:
        return [self.worker(concurrency=concurrency) for _ in range(n)]

    def wait_workers_up(self, n: int) -> None:
        wait_for(lambda: len(self.store.workers()) >= n, timeout=30, interval=0.05, what="workers")

    def runs(self) -> list[Run]:
        runs = []
        for line in appended_lines(self.log):
            start, end, pid, job_id, attempt, key = line.split()
            runs.append(Run(float(start), float(end), int(pid), job_id, int(attempt), key))
        return runs

    def count(self, state: JobState) -> int:
        counts = {q.name: q.counts for q in self.store.queues()}.get("default", {})
        return counts.get(state, 0)

    def wait_count(self, state: JobState, n: int, timeout: float = 60.0) -> None:
        wait_for(
            lambda: self.count(state) >= n, timeout=timeout, interval=0.02, what=f"{n} {state}"
        )

    def jobs(self, ids: Sequence[str]) -> list[Job]:
        found = self.store.get_jobs(list(ids))
        assert all(job is not None for job in found)
        return [job for job in found if job is not None]

    def limit(self, key: str) -> LimitInfo | None:
        return next((info for info in self.store.limits() if info.key == key), None)


@pytest.fixture
def lab(
    url: str,
    store: Store,
    processes: Rota,
    app_path: Callable[[str], str],
    tmp_path: Path,
) -> Iterator[Lab]:
    value = Lab(url, store, processes, app_path("flow"), tmp_path)
    yield value
    value.sender.close()


def max_overlap(runs: Sequence[Run]) -> int:
    """The most runs in progress at one instant."""
    edges = sorted([(r.start, 1) for r in runs] + [(r.end, -1) for r in runs])
    now = peak = 0
    for _, step in edges:  # an end sorts before a start at the same instant
        now += step
        peak = max(peak, now)
    return peak


class Sampler:
    """Polls the store's running count of a key in the background."""

    def __init__(self, store: Store, key: str) -> None:
        self.samples: list[tuple[float, int]] = []
        self._store, self._key = store, key
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.005):
            info = next((i for i in self._store.limits() if i.key == self._key), None)
            self.samples.append((time.time(), info.running if info else 0))

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)

    def peak(self, since: float = 0.0) -> int:
        return max((n for at, n in self.samples if at >= since), default=0)


# -- concurrency ---------------------------------------------------------------


def test_concurrency_limit_holds_across_workers_and_changes_at_run_time(lab: Lab) -> None:
    work = lab.sender.tasks["work"]  # Limit("spiders", 4)
    ids = [h.id for h in work.send_many([("spiders", 0.03)] * 240)]
    with Sampler(lab.store, "spiders") as sampler:
        lab.workers()  # 3 x 6 slots for a limit of 4
        lab.wait_count(JobState.SUCCEEDED, 60)
        before = time.time()
        lab.sender.limits.set("spiders", 2)
        after = time.time()
        lab.wait_count(JobState.SUCCEEDED, 240)
        drained = wait_for(
            lambda: next((at for at, n in sampler.samples if at > after and n <= 2), None),
            what="running down to 2",
        )
    runs = lab.runs()
    assert Counter(r.job_id for r in runs) == Counter(ids), "every job ran exactly once"
    jobs = {job.id: job for job in lab.jobs(ids)}
    assert all(j.state is JobState.SUCCEEDED and j.attempt == 1 for j in jobs.values())
    early = [r for r in runs if (jobs[r.job_id].started_at or 0) < before]
    late = [r for r in runs if (jobs[r.job_id].started_at or 0) > after]
    assert max_overlap(early) == 4, "the limit of 4 is reached and never exceeded"
    assert sampler.peak() <= 4
    assert len(late) > 100
    assert max_overlap(late) == 2, "after set(2), at most 2 run at once"
    assert sampler.peak(since=drained) <= 2
    info = lab.limit("spiders")
    assert info is not None and info.override == 2 and info.concurrency == 2
    assert info.running == 0


# -- rate ------------------------------------------------------------------------------


def paced_starts(lab: Lab, n: int, filler: int = 0) -> list[float]:
    """Send ``n`` jobs on the key ``paced`` (Rate("20/s", burst=5)) to busy or
    idle workers; their claim times (store clock), sorted."""
    lab.workers()
    lab.wait_workers_up(WORKERS)
    if filler:  # other work keeps every worker claiming all the time
        lab.sender.tasks["site"].send_many([(f"f{i % 3}", 0.03) for i in range(filler)])
    ids = [h.id for h in lab.sender.tasks["paced"].send_many([("paced", 0.0)] * n)]
    wait_for(
        lambda: all(job.state is JobState.SUCCEEDED for job in lab.jobs(ids)),
        timeout=40,
        interval=0.1,
        what="the paced jobs",
    )
    return sorted(job.started_at or 0.0 for job in lab.jobs(ids))


def worst_excess(starts: Sequence[float], rate: float, burst: int) -> float:
    """The most any window of starts goes over rate x window + burst."""
    worst = 0.0
    for i, first in enumerate(starts):
        for j in range(i, len(starts)):
            worst = max(worst, (j - i + 1) - (rate * (starts[j] - first) + burst))
    return worst


def test_rate_limit_holds_in_every_window_while_workers_are_busy(lab: Lab) -> None:
    rate, burst, n = 20.0, 5, 100
    starts = paced_starts(lab, n, filler=1200)
    worst = worst_excess(starts, rate, burst)
    assert worst <= 0.05, f"a window started {worst:.2f} jobs more than rate x window + burst"
    overall = (n - burst) / (starts[-1] - starts[0])
    assert 15.0 <= overall <= 20.5, f"overall {overall:.1f} jobs/s for a limit of 20/s"
    paced = [r for r in lab.runs() if r.key == "paced"]
    assert len({r.pid for r in paced}) > 1, "several workers shared the paced key"


def test_idle_workers_start_rate_limited_jobs_at_the_rate(lab: Lab) -> None:
    n = 45
    starts = paced_starts(lab, n)
    assert worst_excess(starts, 20.0, 5) <= 0.05
    overall = (n - 5) / (starts[-1] - starts[0])
    assert overall >= 15.0, f"overall {overall:.1f} jobs/s for a limit of 20/s"


# -- fairness ----------------------------------------------------------------------------


def test_a_big_site_does_not_starve_the_small_ones(lab: Lab) -> None:
    site = lab.sender.tasks["site"]  # Limit(key, 2) per site
    big = [h.id for h in site.send_many([("big.example", 0.005)] * 900)]  # 90%, queued first
    small = [h.id for h in site.send_many([(f"s{i}.example", 0.005) for i in range(99)])]
    lab.workers()
    lab.wait_count(JobState.SUCCEEDED, len(big) + len(small), timeout=60)
    runs = {r.job_id: r for r in lab.runs()}
    big_ends = sorted(runs[i].end for i in big)
    small_last = max(runs[i].end for i in small)
    done_before = sum(end < small_last for end in big_ends)
    assert done_before < 0.3 * len(big), (
        f"{done_before} of the big site's {len(big)} jobs finished before the small sites'"
    )
    assert max_overlap([runs[i] for i in big]) == 2


# -- blocked jobs --------------------------------------------------------------------------


def test_blocked_jobs_stay_queued_and_do_not_hold_up_others(lab: Lab) -> None:
    site = lab.sender.tasks["site"]
    lab.sender.limits.set("held", 0)
    held = [h.id for h in site.send_many([("held", 0.0)] * 50)]
    others = [h.id for h in site.send_many([(f"k{i % 10}", 0.01) for i in range(100)])]
    lab.workers()
    lab.wait_count(JobState.SUCCEEDED, len(others), timeout=30)
    # One more job, sent after: once it ran, the workers have passed over the
    # held jobs again.
    sentinel = site.send("sentinel", 0.0)
    sentinel.result(timeout=30)
    for job in lab.jobs(held):
        assert job.state is JobState.QUEUED
        assert job.attempt == 0 and job.lost == 0 and not job.history and job.error is None
    assert not [r for r in lab.runs() if r.key == "held"]
    assert lab.count(JobState.FAILED) == 0

    lab.sender.limits.clear("held")  # back to the declared Limit(key, 2)
    lab.wait_count(JobState.SUCCEEDED, len(held) + len(others) + 1, timeout=30)
    assert all(job.attempt == 1 for job in lab.jobs(held))
    assert max_overlap([r for r in lab.runs() if r.key == "held"]) <= 2


def test_many_blocked_high_priority_jobs_do_not_hide_runnable_ones(store: Store, lab: Lab) -> None:
    urgent = lab.sender.tasks["site"].options(priority=10)
    lab.sender.limits.set("held", 0)
    urgent.send_many([("held", 0.0)] * 5000)
    free = {h.id for h in lab.sender.tasks["paced"].send_many([("paced", 0.0)] * 3)}
    claimed = store.claim("probe", ["default"], 4)
    assert {c.id for c in claimed} == free


def test_a_round_of_rate_limited_sites_does_not_hide_other_work(store: Store, lab: Lab) -> None:
    crawl = lab.sender.tasks["fetch"].options(
        concurrency=(), breaker=(), rate=Rate("1/m", key=flow.host_of)
    )
    crawl.send_many([(f"https://h{i}.example/",) for i in range(5000)] * 2)
    first_round = 0
    while batch := store.claim("probe", ["default"], 500):
        first_round += len(batch)
    assert first_round == 5000, "one job per site, then every site waits for a token"
    parse = {h.id for h in lab.sender.tasks["site"].send_many([(f"p{i}", 0.0) for i in range(3)])}
    assert {c.id for c in store.claim("probe", ["default"], 8)} == parse


def test_a_claim_fills_its_batch_when_many_keys_are_ready(store: Store, lab: Lab) -> None:
    lab.sender.tasks["site"].send_many([(f"s{i}.example", 0.0) for i in range(600)])
    started = time.perf_counter()
    sizes = [len(store.claim("probe", ["default"], 16)) for _ in range(5)]
    elapsed = time.perf_counter() - started
    assert sizes == [16] * 5
    assert elapsed < 1.0, f"5 claims took {elapsed:.2f} s"


# -- uniqueness ------------------------------------------------------------------------------


def test_concurrent_senders_store_each_unique_key_once(lab: Lab) -> None:
    n = 500
    senders = [
        subprocess.Popen(
            [sys.executable, str(APPS / "flow.py"), lab.url, mode, str(start), str(n)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for mode, start in (("many", 0), ("many", 250), ("one", 125), ("one", 375))
    ]
    ids: dict[str, set[str]] = {}
    fresh = dupes = 0
    try:
        for proc in senders:
            out, err = proc.communicate(timeout=60)
            assert proc.returncode == 0, err.decode()
            lines = out.decode().splitlines()
            assert len(lines) == n
            for line in lines:
                page, job_id, duplicate = line.split()
                ids.setdefault(page, set()).add(job_id)
                dupes += int(duplicate)
                fresh += 1 - int(duplicate)
    finally:
        for proc in senders:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
    assert len(ids) == n
    assert all(len(found) == 1 for found in ids.values()), "every sender got the same job"
    assert fresh == n and dupes == 3 * n
    stored = lab.store.list_jobs(JobQuery(task="page"), limit=2 * n).jobs
    assert len(stored) == n
    assert {job.id for job in stored} == {next(iter(found)) for found in ids.values()}


# -- circuit breaker ----------------------------------------------------------------------------


def test_breaker_opens_for_a_failing_site_and_probes_after_cooldown(lab: Lab) -> None:
    cooldown = 1.5  # Breaker(3, cooldown) and Limit(host, 1), see apps/flow.py
    fetch = lab.sender.tasks["fetch"]
    (lab.failing / "down.example").touch()
    down = [h.id for h in fetch.send_many([(f"https://down.example/{i}",) for i in range(10)])]
    good = [
        h.id
        for h in fetch.send_many(
            [(f"https://{site}.example/{i}", 0.03) for i in range(20) for site in "abc"]
        )
    ]
    lab.workers()
    # watched from the start: a third probe comes one cooldown after the second
    wait_for(
        lambda: (info := lab.limit("down.example")) is not None and info.failures >= 5,
        timeout=30,
        what="two probes after the breaker opened",
    )
    attempts = sorted((r for r in lab.runs() if r.key == "down.example"), key=lambda r: r.start)
    assert len(attempts) == 5, "3 failures open the breaker, then one probe per cooldown"
    for before, probe in itertools.pairwise(attempts[2:]):
        assert probe.start >= before.end + cooldown - 0.01
    opened_at, first_probe = attempts[2].end, attempts[3].start
    others = [r for r in lab.runs() if r.key != "down.example"]
    assert any(opened_at < r.start < first_probe for r in others), "other sites kept running"
    info = lab.limit("down.example")
    assert info is not None and info.open_until is not None
    waiting = [job for job in lab.jobs(down) if job.state is JobState.QUEUED]
    assert len(waiting) == 5 and all(job.attempt == 0 for job in waiting)
    lab.wait_count(JobState.SUCCEEDED, len(good), timeout=30)

    (lab.failing / "down.example").unlink()
    assert lab.sender.limits.reset_breaker("down.example")
    lab.wait_count(JobState.SUCCEEDED, len(good) + 5, timeout=20)
    assert lab.count(JobState.FAILED) == 5
    info = lab.limit("down.example")
    assert info is not None and info.open_until is None and info.failures == 0
    assert not lab.sender.limits.reset_breaker("down.example"), "nothing left to reset"


# -- host load gate --------------------------------------------------------------------------------


def test_a_worker_over_its_memory_threshold_holds_back(lab: Lab) -> None:
    gated = lab.worker("--max-mem", "1", concurrency=4)
    beat = wait_for(
        lambda: next(
            (w for w in lab.store.workers() if w.pid == gated.pid and w.holding_back), None
        ),
        timeout=30,
        interval=0.05,
        what="the gated worker's heartbeat",
    )
    assert beat.mem_percent is not None and beat.mem_percent > 1
    ids = [
        h.id for h in lab.sender.tasks["site"].send_many([(f"k{i % 5}", 0.01) for i in range(40)])
    ]
    free = lab.worker(concurrency=4)
    lab.wait_count(JobState.SUCCEEDED, len(ids), timeout=30)
    assert {r.pid for r in lab.runs()} == {free.pid}, "only the worker under its threshold ran jobs"
    gate = next(w for w in lab.store.workers() if w.pid == gated.pid)
    assert gate.holding_back and gate.running == 0 and gate.processed == 0
    assert gated.poll() is None, "holding back is not exiting"
