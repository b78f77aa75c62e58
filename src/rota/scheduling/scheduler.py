"""The scheduler: turns due schedule fires into jobs, exactly once across any number of schedulers.

A :class:`Scheduler` keeps a copy of the store's schedules, sleeps until the
nearest next fire, and fires what is due. Every fire is one
:meth:`~rota.stores.base.Store.fire_schedule` call: a compare-and-set of the
schedule's next fire time plus the enqueue of the fire's job, in one atomic
step. When several schedulers race for the same fire, exactly one step
applies; the others see ``"conflict"``, re-read the schedules and move on.
The fire's job id is derived from ``(schedule name, fire time)``, so even a
fire replayed after its schedule was removed and defined again finds its job
already there and does not enqueue a second one.

The scheduler never runs user code and needs no task registry: it builds
jobs from what the schedules store (see :mod:`rota.scheduling.define`).
It reads no clock but the store's.
"""

from __future__ import annotations

import logging
import math
import uuid
from collections import Counter
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Protocol

from rota.errors import InvalidArgument, RotaError, StoreUnavailable
from rota.models import NewJob, Schedule
from rota.scheduling.define import schedule_job
from rota.scheduling.triggers import FirePlan, Trigger, jitter_offset, plan_fires, trigger_from_json
from rota.stores.base import FireResult

if TYPE_CHECKING:
    from rota.app import App
    from rota.stores import Store

__all__ = ["DEFAULT_MAX_SLEEP", "Scheduler", "fire_job_id"]

log = logging.getLogger("rota.scheduler")

#: Longest the scheduler sleeps before looking for changed schedules, in seconds.
DEFAULT_MAX_SLEEP = 0.5

_NAMESPACE = uuid.UUID("5f1d8a52-7c0e-4d59-9a4e-2b7e61a0c3d4")
_MAX_CONFLICTS = 20  # re-reads of one schedule per tick before leaving it to the next tick
_MAX_BACKOFF = 30.0


def _when(t: float) -> str:
    """A fire time for logs: ISO 8601 UTC to the millisecond."""
    return datetime.fromtimestamp(t, UTC).isoformat(timespec="milliseconds")


def _dropped_text(step: _Step) -> str:
    """What a step without a job did, worded per misfire policy.

    ``dropped 4 missed fire(s), the first at ...`` and then: with
    ``misfire="coalesce"``, ``coalesced into the fire at ...`` (the one fire
    sent for them; an overlap rule may still skip it); with ``"all"``, why
    they were dropped (older than the grace, over the catch-up limit) and the
    due fires that follow, each its own fire; or, all older than the grace,
    the fire to come."""
    dropped = f"dropped {step.dropped} missed fire(s), the first at {_when(step.expected)}"
    if not step.kept:
        after = "none" if step.new_next is None else _when(step.new_next)
        return f"{dropped}, all older than its grace; next fire: {after}"
    assert step.new_next is not None
    if step.misfire == "coalesce":
        return f"{dropped}; coalesced into the fire at {_when(step.new_next)}"
    late, over = step.late, step.dropped - step.late
    too_old, too_many = "older than its grace", f"over the catch-up limit of {step.limit}"
    why = too_old if late else too_many
    if late and over:  # both kinds: count each
        why = f"{late} {too_old}, {over} {too_many}"
    return (
        f"{dropped} ({why}); the {step.sent} due fire(s) after them fire one by one "
        f"(misfire='all'), the first at {_when(step.new_next)}"
    )


def _skipped_text(overlap: str) -> str:
    """Why a fire was skipped under the schedule's ``overlap`` rule."""
    if overlap == "queue":
        return "a job it sent still waits to run, and overlap='queue' lets only one wait"
    return f"its previous job has not finished (overlap={overlap!r})"


def _definition(schedule: Schedule) -> Schedule:
    """``schedule`` without the fields firing changes: what its definition says."""
    return replace(
        schedule, next_fire=None, enabled=True, last_fire=None, last_job_id=None, skipped=0
    )


def fire_job_id(name: str, fire_time: float) -> str:
    """The id of the job that schedule ``name`` enqueues for ``fire_time``.

    The same on every machine, so a fire can never make two jobs.
    """
    return uuid.uuid5(_NAMESPACE, f"{name}\x00{float(fire_time)!r}").hex


@dataclass(frozen=True, slots=True)
class _Step:
    """One ``fire_schedule`` call: move next fire from ``expected`` to ``new_next``.
    A step without a job drops ``dropped`` due fires, the first at ``expected``,
    ``late`` of them older than the grace; ``new_next`` is then the first of
    the ``sent`` fires the next steps send (``misfire`` says how they stand
    for the dropped ones; ``limit`` is the catch-up limit), or with ``kept``
    False the schedule's next fire still to come."""

    expected: float
    new_next: float | None
    job: NewJob | None
    dropped: int = 0
    kept: bool = False
    late: int = 0
    sent: int = 0
    misfire: str = "coalesce"
    limit: int = 0


class StopFlag(Protocol):
    """What :meth:`Scheduler.run` stops on: a :class:`threading.Event`, or the
    stop signals of a process (``rota scheduler``)."""

    def is_set(self) -> bool:
        """Whether to stop."""
        ...

    def wait(self, timeout: float) -> object:
        """Return once set, or after ``timeout`` seconds."""
        ...


class Scheduler:
    """Fires ``app``'s schedules. Any number may run, on any machines.

    :meth:`run` loops until its stop event is set; :meth:`tick` does one pass
    and is what tests and embedders call. ``max_sleep`` bounds how long a
    change to the schedules (a new one, a pause, a removal) may go unseen.
    ``max_catchup`` is passed to :func:`~rota.scheduling.plan_fires`: with
    ``misfire="all"``, at most that many missed fires are enqueued.

    ``counts`` tallies what this scheduler's fire attempts returned:
    ``fired``, ``skipped``, ``dropped``, ``conflict`` and ``duplicate`` (a
    job for that fire already existed).
    """

    def __init__(
        self, app: App, *, max_sleep: float = DEFAULT_MAX_SLEEP, max_catchup: int = 100
    ) -> None:
        if not (isinstance(max_sleep, int | float) and 0 < max_sleep < math.inf):
            raise InvalidArgument(f"max_sleep must be a positive number, not {max_sleep!r}")
        if isinstance(max_catchup, bool) or not isinstance(max_catchup, int) or max_catchup < 1:
            raise InvalidArgument(f"max_catchup must be an integer >= 1, not {max_catchup!r}")
        self.app = app
        self.max_sleep = float(max_sleep)
        self.max_catchup = max_catchup
        self.counts: Counter[str] = Counter()
        self._version: int | None = None
        self._schedules: dict[str, Schedule] = {}
        self._triggers: dict[str, tuple[dict[str, object], Trigger]] = {}
        self._broken: dict[str, Schedule] = {}

    # -- loop ------------------------------------------------------------------

    def run(self, stop: StopFlag) -> None:
        """Fire schedules until ``stop`` is set.

        Sleeps until the nearest next fire, and at most ``max_sleep`` between
        looks at the store's schedule version. A store error is logged and
        retried with a growing pause; it never ends the loop.
        """
        log.info("scheduler started")
        failures = 0
        while not stop.is_set():
            try:
                delay = self.tick()
                failures = 0
            except Exception as exc:
                failures += 1
                delay = min(_MAX_BACKOFF, 0.25 * 2 ** min(failures, 8))
                if failures > 1:
                    log.warning("scheduler tick failed %d times in a row", failures)
                elif isinstance(exc, StoreUnavailable):  # an outage: the store's words say it
                    log.warning("scheduler tick failed; retrying with backoff: %s", exc)
                else:
                    log.exception("scheduler tick failed; retrying with backoff")
                self._version = None  # re-read everything once the store answers
            stop.wait(min(max(delay, 0.0005), self.max_sleep))
        log.info("scheduler stopped")

    def tick(self) -> float:
        """Fire everything due now; return the seconds until the next fire (inf: none)."""
        store = self.app.store
        version = store.schedule_changed_since(-1 if self._version is None else self._version)
        if version != self._version:
            self._reload(store, version)
        now = store.now()
        for name in [n for n, s in self._schedules.items() if self._is_due(s, now)]:
            self._fire(store, name)
        return self._until_next(store.now())

    # -- firing ----------------------------------------------------------------

    def _fire(self, store: Store, name: str) -> None:
        """Fire schedule ``name`` until it is no longer due, re-reading on conflicts."""
        for _ in range(_MAX_CONFLICTS):
            schedule = self._schedules.get(name)
            now = store.now()
            if schedule is None or not self._is_due(schedule, now):
                return
            steps = self._plan(schedule, now)
            if steps is None:
                return
            try:
                result, done = self._apply(store, schedule, steps)
            except StoreUnavailable:
                raise
            except RotaError:  # the store refused this schedule's job: skip it, not the rest
                self._set_broken(schedule)
                return
            if result != "conflict":
                self._schedules[name] = replace(
                    schedule, next_fire=steps[-1].new_next, last_fire=steps[-1].expected
                )
                return
            if done:  # part of a catch-up applied before another scheduler took over
                log.debug("schedule %s: another scheduler continued its catch-up", name)
            self._reload(store, self._version)
        log.warning("schedule %s: gave up after %d conflicting fires", name, _MAX_CONFLICTS)

    def _plan(self, schedule: Schedule, now: float) -> list[_Step] | None:
        """The ``fire_schedule`` calls that bring ``schedule`` up to ``now``.

        ``coalesce`` and ``all`` both start by dropping the fires the plan
        leaves out (one call without a job), then fire each planned time,
        each call moving the next fire to the following planned time, the
        last one to the plan's next fire. None when the schedule cannot be
        read (logged once; it is skipped until the schedules change).
        """
        assert schedule.next_fire is not None
        try:
            trigger = self._trigger(schedule)
            plan = plan_fires(
                trigger,
                schedule.next_fire,
                now,
                schedule.misfire,
                schedule.grace,
                self.max_catchup,
            )
            return self._steps(schedule, plan)
        except (RotaError, TypeError, ValueError, KeyError):
            self._set_broken(schedule)
            return None

    def _steps(self, schedule: Schedule, plan: FirePlan) -> list[_Step]:
        assert schedule.next_fire is not None
        if not plan.fires:
            return [_Step(schedule.next_fire, plan.next_fire, None, plan.dropped)]
        steps = []
        if plan.fires[0] != schedule.next_fire:
            drop = _Step(
                schedule.next_fire,
                plan.fires[0],
                None,
                plan.dropped,
                kept=True,
                late=plan.late,
                sent=len(plan.fires),
                misfire=schedule.misfire,
                limit=self.max_catchup,
            )
            steps.append(drop)
        for index, fire in enumerate(plan.fires):
            following = plan.fires[index + 1] if index + 1 < len(plan.fires) else plan.next_fire
            steps.append(_Step(fire, following, self._job(schedule, fire)))
        return steps

    def _job(self, schedule: Schedule, fire: float) -> NewJob:
        return schedule_job(
            schedule,
            job_id=fire_job_id(schedule.name, fire),
            fire_time=fire,
            run_at=fire + jitter_offset(schedule.name, fire, schedule.jitter),
        )

    def _apply(
        self, store: Store, schedule: Schedule, steps: list[_Step]
    ) -> tuple[FireResult, int]:
        """Run the steps in order; stop at a conflict. Returns the last result and
        how many steps applied."""
        name = schedule.name
        result: FireResult = "conflict"
        for done, step in enumerate(steps):
            result = self._fire_step(store, schedule, step)
            if result == "conflict":
                self.counts["conflict"] += 1
                log.debug(
                    "schedule %s: fire at %s taken by another scheduler", name, _when(step.expected)
                )
                return result, done
        return result, len(steps)

    def _fire_step(self, store: Store, schedule: Schedule, step: _Step) -> FireResult:
        name, job = schedule.name, step.job
        try:
            result = store.fire_schedule(name, step.expected, step.new_next, job)
        except InvalidArgument:
            # A job with this fire's id exists: the fire was enqueued before (the
            # schedule was removed and defined again). Advance without a job.
            if job is None or store.get_job(job.id) is None:
                raise
            result = store.fire_schedule(name, step.expected, step.new_next, None)
            if result != "conflict":
                self.counts["duplicate"] += 1
                log.info(
                    "schedule %s: the job for the fire at %s exists already (%s); not sent again",
                    name,
                    _when(step.expected),
                    job.id,
                )
                return result
        if result == "conflict":
            return result
        self.counts[result] += 1
        if result == "fired":
            assert job is not None
            log.debug("schedule %s fired at %s: job %s", name, _when(step.expected), job.id)
        elif result == "skipped":
            log.info(
                "schedule %s: the fire at %s skipped: %s",
                name,
                _when(step.expected),
                _skipped_text(schedule.overlap),
            )
        else:
            # fires coalesced into one that is sent are not lost; fires dropped
            # for their age or over the catch-up limit run no job: a warning
            coalesced = step.kept and step.misfire == "coalesce"
            level = logging.INFO if coalesced else logging.WARNING
            log.log(level, "schedule %s: %s", name, _dropped_text(step))
        return result

    # -- state -----------------------------------------------------------------

    def _reload(self, store: Store, version: int | None) -> None:
        self._schedules = {s.name: s for s in store.schedules()}
        self._version = version
        self._broken = {
            name: definition
            for name, definition in self._broken.items()
            if name in self._schedules and _definition(self._schedules[name]) == definition
        }
        self._triggers = {
            name: cached for name, cached in self._triggers.items() if name in self._schedules
        }

    def _set_broken(self, schedule: Schedule) -> None:
        """Leave ``schedule`` alone until it is defined again; log why, once."""
        self._broken[schedule.name] = _definition(schedule)
        log.exception("schedule %s cannot be fired; skipping it until it changes", schedule.name)

    def _trigger(self, schedule: Schedule) -> Trigger:
        cached = self._triggers.get(schedule.name)
        if cached is not None and cached[0] == schedule.trigger:
            return cached[1]
        trigger = trigger_from_json(schedule.trigger)
        self._triggers[schedule.name] = (schedule.trigger, trigger)
        return trigger

    def _is_due(self, schedule: Schedule, now: float) -> bool:
        return (
            schedule.enabled
            and schedule.next_fire is not None
            and schedule.next_fire <= now
            and schedule.name not in self._broken
        )

    def _until_next(self, now: float) -> float:
        pending = [
            s.next_fire
            for s in self._schedules.values()
            if s.enabled and s.next_fire is not None and s.name not in self._broken
        ]
        return max(0.0, min(pending) - now) if pending else math.inf
