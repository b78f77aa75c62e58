"""Prometheus metrics, read from the store on every scrape.

Nothing is counted in the web process: a custom collector asks the store at
scrape time, so any number of dashboard replicas report the same numbers.

Exported:

- ``rota_jobs{queue,state}``: jobs per queue and state (gauge);
- ``rota_queue_paused{queue}``: 1 when the queue is paused;
- ``rota_jobs_succeeded_total{queue,task}`` and ``rota_jobs_failed_total{queue,task}``:
  finished attempts, all time (counters);
- ``rota_workers{status}``: workers ``online`` and ``lost`` (no heartbeat for 30 s);
- ``rota_worker_running_jobs{worker,host}``: running jobs per online worker;
- ``rota_limit_running{key}``, ``rota_limit_concurrency{key}``: flow-control slots;
- ``rota_limit_rate{key}``: the rate in force, in jobs per second (keys with a rate);
- ``rota_limit_breaker{key,state}``: 1 for the state of the key's breaker
  (``closed``, ``open``, ``half-open``), and ``rota_limit_breaker_failures{key}``:
  the failures it counted since its last success, for alerts on a site that is down;
- ``rota_schedule_enabled{schedule}``, ``rota_schedule_overdue{schedule}`` (1 when
  active with its next fire long past: no scheduler seems to run),
  ``rota_schedule_next_fire_timestamp_seconds{schedule}``,
  ``rota_schedule_last_fire_timestamp_seconds{schedule}`` (which moves on fires
  that sent no job too: dropped as older than the grace, or skipped by the
  overlap rule) and ``rota_schedule_last_job_fire_timestamp_seconds{schedule}``
  (the fire time of its last job, the last one actually sent), each absent
  when there is none, and ``rota_schedule_last_job{schedule,state}``: 1 for the
  state of its last job (``gone`` once purged), for alerts on a cron job that
  failed, stopped firing or stopped sending jobs;
- ``rota_recent_wait_seconds{quantile}`` and ``rota_recent_run_seconds{quantile}``:
  queue wait (started - run_at) and run time (finished - started) of the last
  :data:`RECENT` succeeded jobs. These are gauges over a sample, not a
  cumulative histogram: the store keeps no latency counters, and a histogram
  rebuilt from a sliding sample would break ``rate()``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry

from rota.models import JobQuery, JobState
from rota.stores.base import Store
from rota.web import _ops

__all__ = ["RECENT", "StoreCollector", "registry_for"]

#: How many recent succeeded jobs the latency quantiles are computed from.
RECENT = 500

_QUANTILES = (0.5, 0.9, 0.99)


def _quantile(sorted_values: Sequence[float], q: float) -> float:
    index = min(len(sorted_values) - 1, max(0, round(q * (len(sorted_values) - 1))))
    return sorted_values[index]


class StoreCollector(Collector):
    """Reads queue counts, totals, workers, limits and schedules from the store
    on each scrape."""

    def __init__(self, store: Callable[[], Store]) -> None:
        self._get_store = store

    @property
    def _store(self) -> Store:
        return self._get_store()

    def describe(self) -> list[Metric]:
        """Nothing up front: describing would cost a scrape of the store."""
        return []

    def collect(self) -> Iterator[Metric]:
        """One set of samples, straight from the store."""
        yield from self._queues()
        yield from self._totals()
        yield from self._workers()
        yield from self._limits()
        yield from self._schedules()
        yield from self._latency()

    def _queues(self) -> Iterator[Metric]:
        jobs = GaugeMetricFamily("rota_jobs", "Jobs by queue and state.", labels=["queue", "state"])
        paused = GaugeMetricFamily(
            "rota_queue_paused", "1 if the queue is paused.", labels=["queue"]
        )
        for info in self._store.queues():
            for state in JobState:
                jobs.add_metric([info.name, state.value], info.counts.get(state, 0))
            paused.add_metric([info.name], 1.0 if info.paused else 0.0)
        yield jobs
        yield paused

    def _totals(self) -> Iterator[Metric]:
        good = CounterMetricFamily(
            "rota_jobs_succeeded", "Succeeded attempts, all time.", labels=["queue", "task"]
        )
        bad = CounterMetricFamily(
            "rota_jobs_failed", "Failed attempts, all time.", labels=["queue", "task"]
        )
        for row in self._store.totals():
            good.add_metric([row.queue, row.task], row.succeeded)
            bad.add_metric([row.queue, row.task], row.failed)
        yield good
        yield bad

    def _workers(self) -> Iterator[Metric]:
        views = _ops.workers(self._store)
        count = GaugeMetricFamily("rota_workers", "Workers by status.", labels=["status"])
        lost = sum(1 for w in views if w.lost)
        count.add_metric(["online"], len(views) - lost)
        count.add_metric(["lost"], lost)
        yield count
        running = GaugeMetricFamily(
            "rota_worker_running_jobs", "Running jobs per online worker.", labels=["worker", "host"]
        )
        for w in views:
            if not w.lost:
                running.add_metric([w.id, w.host], w.running)
        yield running

    def _limits(self) -> Iterator[Metric]:
        running = GaugeMetricFamily(
            "rota_limit_running", "Running jobs holding a limit key.", labels=["key"]
        )
        cap = GaugeMetricFamily(
            "rota_limit_concurrency", "Concurrency limit in force per key.", labels=["key"]
        )
        rate = GaugeMetricFamily(
            "rota_limit_rate", "Rate limit in force per key, in jobs per second.", labels=["key"]
        )
        breaker = GaugeMetricFamily(
            "rota_limit_breaker", "1 for the state of the key's breaker.", labels=["key", "state"]
        )
        failures = GaugeMetricFamily(
            "rota_limit_breaker_failures",
            "Failures the key's breaker counted since its last success.",
            labels=["key"],
        )
        for view in _ops.limits(self._store):
            running.add_metric([view.key], view.running)
            if view.concurrency is not None:
                cap.add_metric([view.key], view.concurrency)
            if view.rate_in_force is not None:
                rate.add_metric([view.key], view.rate_in_force)
            breaker.add_metric([view.key, view.breaker], 1.0)
            failures.add_metric([view.key], view.failures)
        yield from (running, cap, rate, breaker, failures)

    def _schedules(self) -> Iterator[Metric]:
        label = ["schedule"]
        enabled = GaugeMetricFamily("rota_schedule_enabled", "1 if it fires.", labels=label)
        overdue = GaugeMetricFamily(
            "rota_schedule_overdue", "1 if its next fire is long past.", labels=label
        )
        next_fire = GaugeMetricFamily(
            "rota_schedule_next_fire_timestamp_seconds", "When it fires next.", labels=label
        )
        last_fire = GaugeMetricFamily(
            "rota_schedule_last_fire_timestamp_seconds",
            "When it last fired, a fire that sent no job (dropped, skipped) too.",
            labels=label,
        )
        last_job_fire = GaugeMetricFamily(
            "rota_schedule_last_job_fire_timestamp_seconds",
            "The fire time of its last job, the last one actually sent.",
            labels=label,
        )
        last_job = GaugeMetricFamily(
            "rota_schedule_last_job",
            "1 for the state of the job of its last fire.",
            labels=["schedule", "state"],
        )
        for view in _ops.schedules(self._store):
            enabled.add_metric([view.name], 1.0 if view.enabled else 0.0)
            overdue.add_metric([view.name], 1.0 if view.overdue else 0.0)
            if view.next_fire is not None:
                next_fire.add_metric([view.name], view.next_fire)
            if view.last_fire is not None:
                last_fire.add_metric([view.name], view.last_fire)
            if view.last_job_fire is not None:
                last_job_fire.add_metric([view.name], view.last_job_fire)
            if view.last_job_id is not None:
                state = view.last_job_state.value if view.last_job_state else "gone"
                last_job.add_metric([view.name, state], 1.0)
        yield from (enabled, overdue, next_fire, last_fire, last_job_fire, last_job)

    def _latency(self) -> Iterator[Metric]:
        page = self._store.list_jobs(JobQuery(state=JobState.SUCCEEDED), limit=RECENT)
        waits = sorted(
            max(0.0, j.started_at - j.run_at) for j in page.jobs if j.started_at is not None
        )
        runs = sorted(
            max(0.0, j.finished_at - j.started_at)
            for j in page.jobs
            if j.started_at is not None and j.finished_at is not None
        )
        for name, text, values in (
            ("rota_recent_wait_seconds", "Queue wait of recent succeeded jobs.", waits),
            ("rota_recent_run_seconds", "Run time of recent succeeded jobs.", runs),
        ):
            family = GaugeMetricFamily(name, text, labels=["quantile"])
            for q in _QUANTILES:
                if values:
                    family.add_metric([str(q)], _quantile(values, q))
            yield family


def registry_for(store: Callable[[], Store]) -> CollectorRegistry:
    """A registry holding only rota's store collector."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(StoreCollector(store))
    return registry
