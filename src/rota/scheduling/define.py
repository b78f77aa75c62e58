"""Schedules as code defines them: validation, what the store keeps, the job a fire makes.

:func:`define_schedule` (behind :meth:`rota.App.schedule`) checks a schedule
definition, encodes its arguments the way :meth:`rota.Task.send` does and
stores it by name. Everything a fired job needs (task name, payload, queue,
priority, attempts, lease, limit keys, unique key) is kept in the schedule
itself, so a scheduler builds jobs from the store alone with
:func:`schedule_job`, without importing the task's code.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from rota import _validate
from rota._time import parse_duration
from rota.errors import (
    InvalidArgument,
    InvalidSchedule,
    PayloadTooLarge,
    SerializationError,
    UnknownTask,
)
from rota.models import BreakerKey, ConcurrencyKey, NewJob, RateKey, Schedule
from rota.scheduling.triggers import MISFIRE_POLICIES, Trigger
from rota.task import Task

if TYPE_CHECKING:
    from rota.app import App

__all__ = [
    "MAX_NAME_LENGTH",
    "OVERLAP_KEY_PREFIX",
    "OVERLAP_POLICIES",
    "define_schedule",
    "job_options",
    "naming_schedule",
    "schedule_job",
]


@contextmanager
def naming_schedule(name: str) -> Iterator[None]:
    """Raise the errors of schedule ``name``'s definition that would not say
    which schedule they are about (an unknown task, arguments over the
    payload cap) with its name."""
    try:
        yield
    except UnknownTask as exc:
        raise UnknownTask(exc.name, exc.known, f"schedule {name!r}") from None
    except PayloadTooLarge as exc:
        raise PayloadTooLarge(exc.size, exc.cap, f"schedule {name!r}") from None


#: What a fire does while the schedule's previous job has not finished:
#: ``allow`` enqueues anyway, ``skip`` enqueues nothing while the last job is
#: pending or running, ``queue`` lets one job wait behind a running one.
OVERLAP_POLICIES = ("allow", "skip", "queue")

#: The concurrency key, limit 1, of every job an ``overlap="queue"`` schedule
#: fires: the job that waits starts when the running one ends, not beside it.
OVERLAP_KEY_PREFIX = "schedule:"

#: Longest schedule name accepted.
MAX_NAME_LENGTH = _validate.MAX_NAME_LENGTH


def define_schedule(
    app: App,
    name: str,
    task: Task[Any, Any] | str,
    trigger: Trigger,
    *,
    args: Sequence[Any] = (),
    kwargs: Mapping[str, Any] | None = None,
    jitter: float = 0.0,
    misfire: str = "coalesce",
    grace: float | None = None,
    overlap: str = "allow",
    enabled: bool | None = None,
) -> Schedule:
    """Create or update (by ``name``) a schedule in ``app``'s store; return it as stored.

    Every argument is checked before anything is written, with a message that
    names the schedule: :class:`~rota.errors.InvalidSchedule` for the name,
    trigger, ``jitter``, ``misfire``, ``grace``, ``overlap`` and ``enabled``;
    :class:`~rota.errors.UnknownTask` for a task name the app does not know;
    :class:`~rota.errors.InvalidArgument` for ``args``/``kwargs`` of the wrong
    type; :class:`~rota.errors.SerializationError` for arguments that are not
    JSON. ``jitter`` and ``grace`` take seconds or durations such as ``"90s"``.

    A new schedule's next fire is the trigger's first fire at or after the
    store's now. Redefining an existing schedule with the same trigger keeps
    its next fire, last fire and paused state, so re-running the definition on
    every deploy never duplicates or resets it; a changed trigger restarts
    from the new trigger's first fire (and keeps the paused state too).

    ``enabled``: None (the default) creates a schedule enabled and leaves an
    existing one as it is, paused or not; True or False creates it so, or
    resumes or pauses an existing one.
    """
    _check_name(name)
    bound = _bound_task(app, name, task)
    if not isinstance(trigger, Trigger):
        raise InvalidSchedule(
            f"schedule {name!r}: trigger must be at(...), every(...) or cron(...), "
            f"not {type(trigger).__name__}"
        )
    jitter_s = _seconds(name, "jitter", jitter)
    grace_s = None if grace is None else _seconds(name, "grace", grace)
    if misfire not in MISFIRE_POLICIES:
        raise InvalidSchedule(
            f"schedule {name!r}: misfire must be 'coalesce' or 'all', not {misfire!r}"
        )
    if overlap not in OVERLAP_POLICIES:
        raise InvalidSchedule(
            f"schedule {name!r}: overlap must be 'allow', 'skip' or 'queue', not {overlap!r}"
        )
    if enabled is not None and not isinstance(enabled, bool):
        raise InvalidSchedule(
            f"schedule {name!r}: enabled must be True, False or None, not {enabled!r}"
        )
    job = _template_job(name, bound, args, kwargs)

    store = app.store
    store.upsert_schedule(
        Schedule(
            name=name,
            task=bound.name,
            trigger=trigger.to_json(),
            payload=job.payload,
            next_fire=trigger.first_fire(store.now()),
            enabled=enabled is not False,  # an existing schedule keeps its own
            misfire=misfire,
            grace=grace_s,
            overlap=overlap,
            jitter=jitter_s,
            job_options=job_options(job),
        )
    )
    stored = store.get_schedule(name)
    if stored is not None and enabled is not None and stored.enabled != enabled:
        store.set_schedule_enabled(name, enabled)
        stored = store.get_schedule(name)
    if stored is None:  # removed by someone else in between
        raise InvalidSchedule(f"schedule {name!r} was removed while it was being defined")
    return stored


def job_options(job: NewJob) -> dict[str, Any]:
    """The fields of ``job`` a schedule keeps so that its fires make the same job.

    JSON-safe: limit keys become lists (``[key, limit]``, ``[key, rate,
    burst]``, ``[key, failures, cooldown]`` and the kinds a breaker ignores
    when there are some). :func:`schedule_job` reverses it.
    """
    return {
        "queue": job.queue,
        "priority": job.priority,
        "max_attempts": job.max_attempts,
        "max_lost": job.max_lost,
        "lease": job.lease,
        "timeout": job.timeout,
        "concurrency": [[c.key, c.limit] for c in job.concurrency],
        "rate": [[r.key, r.rate, r.burst] for r in job.rate],
        "breaker": [
            [b.key, b.failures, b.cooldown, *([list(b.ignore)] if b.ignore else [])]
            for b in job.breaker
        ],
        "unique_key": job.unique_key,
        "unique_for": job.unique_for,
        "host": job.host,
        "retry": job.retry,
    }


def schedule_job(
    schedule: Schedule, *, job_id: str, fire_time: float, run_at: float | None = None
) -> NewJob:
    """The job one fire of ``schedule`` enqueues, built from the stored schedule alone.

    It carries ``schedule=schedule.name`` and ``fire_time``; it runs at
    ``run_at`` (None: as soon as it is enqueued). Options missing from
    ``job_options`` take :class:`~rota.models.NewJob`'s defaults. The jobs of
    an ``overlap="queue"`` schedule also carry its :data:`OVERLAP_KEY_PREFIX`
    concurrency key, so that no two of them run at once.
    """
    o = schedule.job_options
    defaults = NewJob(id="", task="", queue="default", payload=b"")

    def get(key: str) -> Any:
        value = o.get(key)
        return getattr(defaults, key) if value is None else value

    concurrency = _keys(ConcurrencyKey, o.get("concurrency"), ("key", "limit"))
    if schedule.overlap == "queue":
        concurrency += (ConcurrencyKey(OVERLAP_KEY_PREFIX + schedule.name, 1),)
    return NewJob(
        id=job_id,
        task=schedule.task,
        queue=str(get("queue")),
        payload=schedule.payload,
        priority=int(get("priority")),
        run_at=run_at,
        max_attempts=int(get("max_attempts")),
        max_lost=int(get("max_lost")),
        lease=float(get("lease")),
        timeout=None if o.get("timeout") is None else float(o["timeout"]),
        concurrency=concurrency,
        rate=_keys(RateKey, o.get("rate"), ("key", "rate", "burst")),
        breaker=_keys(BreakerKey, o.get("breaker"), ("key", "failures", "cooldown")),
        unique_key=o.get("unique_key"),
        unique_for=None if o.get("unique_for") is None else float(o["unique_for"]),
        schedule=schedule.name,
        fire_time=fire_time,
        host=o.get("host"),
        retry=o.get("retry"),
    )


# -- helpers ---------------------------------------------------------------------


def _check_name(name: object) -> None:
    try:
        valid = _validate.name(name, "schedule name")
    except InvalidArgument as exc:
        raise InvalidSchedule(str(exc)) from None
    # the dashboard's forms are /schedules/new and /schedules/NAME/edit: a
    # schedule named so would have its page hidden behind one of them
    if valid == "new" or valid.endswith("/edit"):
        form = "/schedules/new" if valid == "new" else "/schedules/NAME/edit"
        raise InvalidSchedule(
            f"schedule name {name!r} is taken by the dashboard's form at {form}: pick another"
        )


def _bound_task(app: App, name: str, task: Task[Any, Any] | str) -> Task[Any, Any]:
    """``task`` attached to ``app`` (its payload cap and default lease apply)."""
    if isinstance(task, str):
        return app.get_task(task)
    if isinstance(task, Task):
        return task.bind(app)  # a command task stays one: its calls are checked
    raise InvalidSchedule(
        f"schedule {name!r}: task must be a task or a task name, not {type(task).__name__}"
    )


def _seconds(name: str, what: str, value: Any) -> float:
    try:
        return parse_duration(value, what=what)
    except InvalidArgument as exc:
        raise InvalidSchedule(f"schedule {name!r}: {exc}") from None


def _template_job(
    name: str, task: Task[Any, Any], args: Sequence[Any], kwargs: Mapping[str, Any] | None
) -> NewJob:
    """One job of the call, built exactly as ``task.send`` would build it."""
    if isinstance(args, str | bytes) or not isinstance(args, Sequence):
        raise InvalidArgument(
            f"schedule {name!r}: args must be a tuple or a list, not {type(args).__name__}"
        )
    kwargs = {} if kwargs is None else kwargs
    if not isinstance(kwargs, Mapping):
        raise InvalidArgument(
            f"schedule {name!r}: kwargs must be a dict, not {type(kwargs).__name__}"
        )
    bad = [key for key in kwargs if not isinstance(key, str)]
    if bad:
        raise InvalidArgument(f"schedule {name!r}: kwargs keys must be strings, not {bad[0]!r}")
    try:
        return task.new_job(tuple(args), dict(kwargs))
    except SerializationError as exc:
        raise SerializationError(f"schedule {name!r}: {exc}") from None
    except InvalidArgument as exc:  # a call the task cannot take, a key function's refusal
        raise InvalidArgument(f"schedule {name!r}: {exc}") from exc.__cause__


def _keys(cls: Any, raw: Any, names: tuple[str, ...]) -> tuple[Any, ...]:
    """Limit keys from their stored form: lists (as written here) or objects;
    a list inside one (the kinds a breaker ignores) is a tuple again."""
    items = []
    for item in raw or ():
        values = (item[n] for n in names) if isinstance(item, Mapping) else item
        items.append(cls(*(tuple(v) if isinstance(v, list) else v for v in values)))
    return tuple(items)
