"""Tasks (decorated functions) and the handles of the jobs they send."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Generic, ParamSpec, TypeVar

from rota import _json
from rota._ids import unique_ids
from rota._time import parse_duration, to_epoch
from rota.errors import InvalidArgument, JobCancelled, JobFailed, JobNotFound, JobTimeout
from rota.limits import Breaker, KeySpec, Limit, Rate, resolve_key
from rota.models import (
    BreakerKey,
    ConcurrencyKey,
    EnqueueResult,
    Job,
    JobState,
    NewJob,
    RateKey,
)

if TYPE_CHECKING:
    from rota.app import App

P = ParamSpec("P")
R = TypeVar("R")

UniqueSpec = bool | str | Callable[..., Any] | None


def _as_tuple(value: Any) -> tuple[Any, ...]:
    if value is None:
        return ()
    return tuple(value) if isinstance(value, list | tuple) else (value,)


@dataclass(frozen=True, slots=True)
class TaskOptions:
    """How a task's jobs are queued and run. Every field can be overridden per
    call with :meth:`Task.options`."""

    queue: str = "default"
    priority: int = 0
    retries: int = 0
    backoff: tuple[float, float] = (1.0, 300.0)
    timeout: float | None = None
    lease: float | None = None
    max_lost: int = 3
    concurrency: tuple[Limit, ...] = ()
    rate: tuple[Rate, ...] = ()
    breaker: tuple[Breaker, ...] = ()
    unique: UniqueSpec = None
    unique_for: float | None = None

    @classmethod
    def build(cls, **values: Any) -> TaskOptions:
        """Validate user-given options (precise errors) and normalise them."""
        unknown = set(values) - set(cls.__dataclass_fields__)
        if unknown:
            raise InvalidArgument(f"unknown task option(s): {', '.join(sorted(unknown))}")
        for name in ("concurrency", "rate", "breaker"):
            if name in values:
                values[name] = _as_tuple(values[name])
        if values.get("unique_for") is not None:
            values["unique_for"] = parse_duration(values["unique_for"], what="unique_for")
        for name in ("timeout", "lease"):
            if values.get(name) is not None:
                values[name] = parse_duration(values[name], what=name)
        options = cls(**values)
        options._validate()
        return options

    def merged(self, **overrides: Any) -> TaskOptions:
        """These options with ``overrides`` applied and validated."""
        base = {name: getattr(self, name) for name in self.__dataclass_fields__}
        return TaskOptions.build(**(base | overrides))

    def _validate(self) -> None:
        if not isinstance(self.queue, str) or not self.queue:
            raise InvalidArgument(f"queue must be a non-empty string, not {self.queue!r}")
        if not isinstance(self.priority, int):
            raise InvalidArgument(f"priority must be an integer, not {self.priority!r}")
        if not isinstance(self.retries, int) or self.retries < 0:
            raise InvalidArgument(f"retries must be a non-negative integer, not {self.retries!r}")
        if self.max_lost < 1:
            raise InvalidArgument(f"max_lost must be at least 1, not {self.max_lost!r}")
        base, cap = self.backoff
        if base < 0 or cap < base:
            raise InvalidArgument(
                f"backoff must be (base, max) with 0 <= base <= max, not {self.backoff!r}"
            )
        for kind, cls_ in (("concurrency", Limit), ("rate", Rate), ("breaker", Breaker)):
            for item in getattr(self, kind):
                if not isinstance(item, cls_):
                    raise InvalidArgument(f"{kind} takes rota.{cls_.__name__} values, not {item!r}")


@dataclass(frozen=True, slots=True)
class JobHandle(Generic[R]):
    """A sent job: its ``id``, whether it was a ``duplicate``, and ways to follow it."""

    app: App = field(repr=False)
    id: str
    duplicate: bool = False

    def job(self) -> Job:
        """Everything the store knows about the job."""
        job = self.app.store.get_job(self.id)
        if job is None:
            raise JobNotFound(self.id)
        return job

    def status(self) -> str:
        """The job's state: scheduled, queued, running, succeeded, failed or cancelled."""
        return self.job().state.value

    def result(self, timeout: float | None = None) -> R:
        """Wait for the job to finish and return its result.

        Raises :class:`JobFailed` (with the remote traceback), :class:`JobCancelled`,
        or :class:`JobTimeout` when ``timeout`` seconds pass first.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        pause = 0.002
        while True:
            job = self.job()
            if job.state is JobState.SUCCEEDED:
                return job.result  # type: ignore[no-any-return]
            if job.state is JobState.FAILED:
                raise JobFailed(self.id, job.error, job.traceback)
            if job.state is JobState.CANCELLED:
                raise JobCancelled(self.id)
            if deadline is not None and time.monotonic() >= deadline:
                raise JobTimeout(f"job {self.id} is still {job.state.value} after {timeout} s")
            wait = pause if deadline is None else min(pause, max(0.0, deadline - time.monotonic()))
            time.sleep(wait)
            pause = min(pause * 1.5, 0.25)

    def cancel(self) -> bool:
        """Cancel the job if it has not started; True if it was cancelled."""
        return self.app.store.cancel([self.id])[0]


class Task(Generic[P, R]):
    """A function registered with ``@app.task``: call it directly, or send it as a job."""

    def __init__(
        self, fn: Callable[P, R], name: str, options: TaskOptions, app: App | None = None
    ) -> None:
        self.fn = fn
        self.name = name
        self.opts = options
        self._app = app
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn

    def __repr__(self) -> str:
        return f"<rota.Task {self.name} queue={self.opts.queue!r}>"

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        return self.fn(*args, **kwargs)

    @property
    def app(self) -> App:
        """The app this task is registered with."""
        if self._app is None:
            raise InvalidArgument(f"task {self.name!r} is on a registry no app has included")
        return self._app

    def bind(self, app: App) -> Task[P, R]:
        """This task attached to ``app`` (used by ``App.include``)."""
        self._app = app
        return self

    def options(self, **overrides: Any) -> Task[P, R]:
        """A copy of this task with per-call option overrides:
        ``fetch.options(queue="slow", priority=5).send(url)``."""
        return Task(self.fn, self.name, self.opts.merged(**overrides), self._app)

    def send(self, *args: P.args, **kwargs: P.kwargs) -> JobHandle[R]:
        """Enqueue a job running this task with these arguments, now."""
        return self._send_one(self.new_job(args, kwargs))

    def send_in(self, seconds: float, *args: P.args, **kwargs: P.kwargs) -> JobHandle[R]:
        """Enqueue a job that becomes runnable ``seconds`` from now (store clock)."""
        return self._send_one(self.new_job(args, kwargs, delay=parse_duration(seconds)))

    def send_at(self, when: datetime, *args: P.args, **kwargs: P.kwargs) -> JobHandle[R]:
        """Enqueue a job that becomes runnable at ``when`` (naive means UTC)."""
        return self._send_one(self.new_job(args, kwargs, run_at=to_epoch(when)))

    def send_many(self, calls: Iterable[Sequence[Any] | dict[str, Any]]) -> list[JobHandle[R]]:
        """Enqueue many jobs in one round trip. Each item is a tuple of positional
        arguments, or a dict of keyword arguments. All or none are stored."""
        jobs = []
        for call in calls:
            if isinstance(call, dict):
                jobs.append(self.new_job((), call))
            elif isinstance(call, list | tuple):
                jobs.append(self.new_job(tuple(call), {}))
            else:
                raise InvalidArgument(f"send_many items are tuples or dicts, not {call!r}")
        return self._handles(self.app.store.enqueue(jobs))

    def _send_one(self, job: NewJob) -> JobHandle[R]:
        return self._handles(self.app.store.enqueue([job]))[0]

    def _handles(self, results: list[EnqueueResult]) -> list[JobHandle[R]]:
        return [JobHandle(self.app, r.id, r.duplicate) for r in results]

    def new_job(
        self,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        *,
        delay: float = 0.0,
        run_at: float | None = None,
        job_id: str | None = None,
    ) -> NewJob:
        """Encode a call as a :class:`NewJob`, resolving its limit and unique keys."""
        app = self.app
        payload = _json.dumps(
            {"args": list(args), "kwargs": kwargs}, what="task arguments", cap=app.payload_cap
        )
        o = self.opts
        concurrency, rate, breaker = (
            self._limit_keys(args, kwargs) if o.concurrency or o.rate or o.breaker else ((), (), ())
        )
        return NewJob(
            id=job_id or unique_ids.next(),
            task=self.name,
            queue=o.queue,
            payload=payload,
            priority=o.priority,
            delay=delay,
            run_at=run_at,
            max_attempts=o.retries + 1,
            max_lost=o.max_lost,
            lease=o.lease or app.lease,
            timeout=o.timeout,
            concurrency=concurrency,
            rate=rate,
            breaker=breaker,
            unique_key=self._unique_key(o.unique, payload, args, kwargs),
            unique_for=o.unique_for,
        )

    def _limit_keys(
        self, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[tuple[ConcurrencyKey, ...], tuple[RateKey, ...], tuple[BreakerKey, ...]]:
        """The task's flow-control keys resolved for one call."""
        o = self.opts
        return (
            tuple(ConcurrencyKey(self._key(c.key, args, kwargs), c.limit) for c in o.concurrency),
            tuple(RateKey(self._key(r.key, args, kwargs), r.per_second, r.burst) for r in o.rate),
            tuple(
                BreakerKey(self._key(b.key, args, kwargs), b.failures, b.cooldown_seconds)
                for b in o.breaker
            ),
        )

    def _key(self, spec: KeySpec, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
        return resolve_key(spec, self.name, args, kwargs)

    def _unique_key(
        self, spec: UniqueSpec, payload: bytes, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> str | None:
        if spec is None or spec is False:
            return None
        if spec is True:
            value = hashlib.blake2b(payload, digest_size=16).hexdigest()
        else:
            value = resolve_key(spec, self.name, args, kwargs)
        return f"{self.name}:{value}"


__all__ = ["JobHandle", "Task", "TaskOptions"]
