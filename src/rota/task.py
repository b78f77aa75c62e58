"""Tasks (decorated functions) and the handles of the jobs they send."""

from __future__ import annotations

import contextlib
import copy
import functools
import hashlib
import inspect
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Generic, ParamSpec, TypeVar

from rota import _json, _validate
from rota._connections import dbapi_connection, transaction_of
from rota._ids import unique_ids
from rota._time import parse_duration, to_epoch
from rota.diagnose import job_problem
from rota.errors import (
    InvalidArgument,
    JobCancelled,
    JobFailed,
    JobNotFound,
    PayloadTooLarge,
    ResultTimeout,
    SerializationError,
)
from rota.limits import (
    Breaker,
    KeySpec,
    Limit,
    Rate,
    check_key_spec,
    key_caller,
    resolve_key,
)
from rota.models import (
    BreakerKey,
    ConcurrencyKey,
    EnqueueResult,
    Job,
    JobState,
    NewJob,
    RateKey,
)
from rota.retry import encoded_policy, error_kinds

if TYPE_CHECKING:
    from rota.app import App

P = ParamSpec("P")
R = TypeVar("R")

UniqueSpec = bool | str | Callable[..., Any] | None


def _flow(name: str, kind: type, value: Any) -> tuple[Any, ...]:
    """A flow-control option as a tuple of ``kind`` values (one value or a list)."""
    items = () if value is None else tuple(value) if isinstance(value, list | tuple) else (value,)
    for item in items:
        if not isinstance(item, kind):
            raise InvalidArgument(f"{name} takes rota.{kind.__name__} values, not {item!r}")
    return items


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
    #: One pending job per key: True keys on the call (its arguments bound to
    #: the function's parameters, so keyword and dict key order do not count),
    #: a function on its value, a string is one key for the task.
    unique: UniqueSpec = None
    unique_for: float | None = None
    retry_on: tuple[type[BaseException], ...] | None = None
    no_retry_on: tuple[type[BaseException], ...] = ()
    #: Run only on workers of this host name (``rota worker --host``, by
    #: default the machine's hostname), or anywhere once that host has been
    #: gone for the workers' grace (:class:`rota.models.HostScope`).
    host: str | None = None

    @classmethod
    def build(cls, **values: Any) -> TaskOptions:
        """Validate user-given options (precise :class:`InvalidArgument` errors) and
        normalise them. Bounds are those of :mod:`rota._validate`; bools are not
        integers here."""
        unknown = set(values) - set(cls.__dataclass_fields__)
        if unknown:
            raise InvalidArgument(f"unknown task option(s): {', '.join(sorted(unknown))}")
        for name, low, high in _INTEGERS:
            if name in values:
                values[name] = _validate.integer(values[name], name, low, high)
        _names(values)
        if "backoff" in values:
            values["backoff"] = _backoff(values["backoff"])
        for name in ("timeout", "lease", "unique_for"):
            if values.get(name) is not None:
                values[name] = parse_duration(
                    values[name], what=name, positive=name != "unique_for"
                )
        for name, kind in (("concurrency", Limit), ("rate", Rate), ("breaker", Breaker)):
            if name in values:
                values[name] = _flow(name, kind, values[name])
                _one_per_key(name, [i.key for i in values[name]], values[name], _key_words)
        if not isinstance(values.get("unique"), bool):
            check_key_spec(values.get("unique"), "unique")
        for name in ("retry_on", "no_retry_on"):
            values[name] = _exceptions(name, values.get(name))
        _conflicts(values)
        return cls(**values)

    def merged(self, **overrides: Any) -> TaskOptions:
        """These options with ``overrides`` applied and validated. Turning
        ``unique`` off turns the task's ``unique_for`` off with it."""
        base = {name: getattr(self, name) for name in self.__dataclass_fields__}
        if overrides.get("unique", True) in (None, False) and "unique_for" not in overrides:
            base["unique_for"] = None
        return TaskOptions.build(**(base | overrides))


def _conflicts(values: dict[str, Any]) -> None:
    """Refuse options that do nothing or contradict each other."""
    if values.get("unique_for") is not None and values.get("unique") in (None, False):
        raise InvalidArgument(
            "unique_for needs unique= (True, a key function or a key string): it is "
            "how long a job's unique key is kept after the job succeeded"
        )
    both = set(values["retry_on"] or ()) & set(values["no_retry_on"])
    if both:
        names = ", ".join(sorted(kind.__name__ for kind in both))
        raise InvalidArgument(
            f"{names} {'is' if len(both) == 1 else 'are'} in both retry_on and no_retry_on "
            "(no_retry_on would win): name each exception class in one of them"
        )


#: How two entries of one flow-control option are told apart in a message.
_SAME_KEY: dict[str, tuple[str, Callable[[Any], str]]] = {
    "concurrency": ("limits", lambda c: str(c.limit)),
    "rate": ("rates", lambda r: repr(r.spec)),
    "breaker": ("breakers", lambda b: f"{b.failures} failures"),
}


def _one_per_key(
    name: str, keys: Sequence[Any], items: Sequence[Any], where: Callable[[Any], str]
) -> None:
    """Refuse two of ``items`` (the limits, rates or breakers of option ``name``)
    whose ``keys`` are equal: the store keeps one of each per key, and would
    count such a job twice."""
    seen: dict[Any, int] = {}
    for index, key in enumerate(keys):
        first = seen.setdefault(key, index)
        if first != index:
            plural, value = _SAME_KEY[name]
            raise InvalidArgument(
                f"{name} has two {plural} ({value(items[first])} and {value(items[index])}) "
                f"on {where(key)}: give one {type(items[index]).__name__} per key"
            )


def _key_words(spec: KeySpec) -> str:
    if spec is None:
        return "the task's own key (key=None)"
    if isinstance(spec, str):
        return f"key {spec!r}"
    return f"the key function {getattr(spec, '__qualname__', spec)}"


def _names(values: dict[str, Any]) -> None:
    """The queue, and the host when one is given, are usable names."""
    if "queue" in values:
        _validate.name(values["queue"], "queue")
    if values.get("host") is not None:
        _validate.name(values["host"], "host")


_INTEGERS = (
    ("priority", _validate.MIN_PRIORITY, _validate.MAX_PRIORITY),
    ("retries", 0, _validate.MAX_RETRIES),
    ("max_lost", 1, _validate.MAX_LOST),
)


def _exceptions(name: str, value: Any) -> tuple[type[BaseException], ...] | None:
    """An exception class, or a tuple or list of them (None: ``retry_on``
    retries every error, ``no_retry_on`` excepts none)."""
    if value is None:
        return None if name == "retry_on" else ()
    return _validate.exception_classes(value, name)


def _backoff(value: Any) -> tuple[float, float]:
    """``(base, max)`` in seconds, with ``base <= max``."""
    if not isinstance(value, list | tuple) or len(value) != 2:
        raise InvalidArgument(f"backoff must be (base, max) in seconds, not {value!r}")
    base = parse_duration(value[0], what="backoff base")
    cap = parse_duration(value[1], what="backoff max")
    if cap < base:
        raise InvalidArgument(f"backoff must be (base, max) with base <= max, not {value!r}")
    return base, cap


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

    def result(self, timeout: float | str | None = None) -> R:
        """Wait for the job to finish and return its result.

        Raises :class:`JobFailed` (with the remote traceback; a task that ran
        over its own ``timeout`` fails with ``JobTimeout: ...``),
        :class:`JobCancelled`, or :class:`ResultTimeout` (a
        :class:`TimeoutError` and a :class:`JobTimeout`) when ``timeout``
        (seconds, or a duration such as ``"5s"``) passes first: the wait ends,
        the job goes on. In inline mode (:mod:`rota.testing`) jobs
        that become runnable while it waits run in this thread, and no
        ``timeout`` means no waiting.
        """
        if timeout is not None:
            timeout = parse_duration(timeout, what="timeout")
        inline = self.app._inline
        if inline is not None and timeout is None:
            timeout = 0.0  # nothing else runs the app's jobs: waiting could never end
        deadline = None if timeout is None else time.monotonic() + timeout
        pause = 0.002
        while True:
            if inline is not None:
                inline.run_pending()
            job = self.job()
            if job.state is JobState.SUCCEEDED:
                return job.result  # type: ignore[no-any-return]
            if job.state is JobState.FAILED:
                raise JobFailed(self.id, job.error, job.traceback)
            if job.state is JobState.CANCELLED:
                raise JobCancelled(self.id)
            if deadline is not None and time.monotonic() >= deadline:
                raise ResultTimeout(self.id, self._timeout_message(job, timeout))
            wait = pause if deadline is None else min(pause, max(0.0, deadline - time.monotonic()))
            time.sleep(wait)
            pause = min(pause * 1.5, 0.25)

    def _timeout_message(self, job: Job, timeout: float | None) -> str:
        message = f"job {self.id} is still {job.state.value} after {timeout} s"
        if job.state is JobState.QUEUED:
            problem = job_problem(self.app.store, job, inline=self.app._inline is not None)
            if problem:
                message += f": {problem}"
        elif job.state is JobState.SCHEDULED and job.error:  # given back, or to retry
            message += f" (its last error: {job.error})"
        return message

    def cancel(self) -> bool:
        """Cancel the job: a pending one at once; a running one is asked to stop
        by its worker within about a second (a thread task stops when it
        checks ``current_job().cancelled``) and ends cancelled. True if it was
        cancelled or asked to stop; False if it had finished. Recorded in the
        audit log like any operator action (``app.admin.cancel_job``)."""
        from rota.errors import Conflict

        try:
            self.app.admin.cancel_job(self.id)
        except Conflict:
            return False
        return True


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
        for spec in self._key_functions():
            key_caller(spec, fn)  # refuses a key function that fits no call, now

    def __repr__(self) -> str:
        return f"<rota.Task {self.name} queue={self.opts.queue!r}>"

    def _key_functions(self) -> list[Callable[..., Any]]:
        o = self.opts
        keys = [*(c.key for c in o.concurrency), *(r.key for r in o.rate)]
        specs = [o.unique, *keys, *(b.key for b in o.breaker)]
        return [s for s in specs if callable(s) and not isinstance(s, bool)]

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        return self.fn(*args, **kwargs)

    @property
    def app(self) -> App:
        """The app this task sends through: the app it was declared on, or for a
        task declared on a :class:`~rota.Registry`, the app that included that
        registry last (see :meth:`rota.App.include`)."""
        if self._app is None:
            raise InvalidArgument(f"task {self.name!r} is on a registry no app has included")
        return self._app

    def bind(self, app: App) -> Task[P, R]:
        """A copy of this task attached to ``app`` (used by ``App.include``);
        this task is left as it is."""
        bound = copy.copy(self)
        bound._app = app
        return bound

    def options(self, **overrides: Any) -> Task[P, R]:
        """A copy of this task with per-call option overrides:
        ``fetch.options(queue="slow", priority=5).send(url)``."""
        return Task(self.fn, self.name, self.opts.merged(**overrides), self._app)

    def send(self, *args: P.args, **kwargs: P.kwargs) -> JobHandle[R]:
        """Enqueue a job running this task with these arguments, now.

        Arguments must be exact JSON (None, bool, int, float, str, list, tuple,
        dict with str keys; tuples arrive as lists): anything else, NaN and
        infinities included, raises :class:`~rota.errors.SerializationError`
        naming the bad value, and nothing is enqueued.

        ``connection=conn``, an open database connection (a psycopg one on a
        PostgreSQL store, a mysqlclient, PyMySQL or Connector/Python one on a
        MySQL store, a SQLAlchemy ``Session`` or ``Connection`` over one, or
        Django's ``connection`` in ``transaction.atomic()``), is not an argument
        of the job: the job is stored in that connection's open transaction,
        committed or rolled back with it."""
        connection = self._transaction_of(kwargs)
        return self._send_one(self.new_job(args, kwargs), connection)

    def send_in(self, seconds: float, *args: P.args, **kwargs: P.kwargs) -> JobHandle[R]:
        """Enqueue a job that becomes runnable ``seconds`` from now (store clock);
        ``connection=`` as for :meth:`send`."""
        delay = parse_duration(seconds, what="send_in delay")
        connection = self._transaction_of(kwargs)
        return self._send_one(self.new_job(args, kwargs, delay=delay), connection)

    def send_at(self, when: datetime, *args: P.args, **kwargs: P.kwargs) -> JobHandle[R]:
        """Enqueue a job that becomes runnable at ``when`` (naive means UTC), at
        most 100 years from now (a past time runs as soon as it can);
        ``connection=`` as for :meth:`send`."""
        run_at = _send_at_time(when)
        connection = self._transaction_of(kwargs)
        return self._send_one(self.new_job(args, kwargs, run_at=run_at), connection)

    def send_many(
        self, calls: Iterable[Sequence[Any] | dict[str, Any]], *, connection: Any = None
    ) -> list[JobHandle[R]]:
        """Enqueue many jobs in one round trip. Each item is a tuple of positional
        arguments, or a dict of keyword arguments. All or none are stored: a bad
        item raises before anything is sent, naming the item. ``connection``:
        store them in that connection's open transaction (see :meth:`send`)."""
        jobs = []
        for index, call in enumerate(calls):
            try:
                if isinstance(call, dict):
                    jobs.append(self.new_job((), call))
                elif isinstance(call, list | tuple):
                    jobs.append(self.new_job(tuple(call), {}))
                else:
                    raise InvalidArgument(f"items are tuples or dicts, not {call!r}")
            except PayloadTooLarge as exc:
                raise PayloadTooLarge(exc.size, exc.cap, f"send_many item {index}") from None
            except (InvalidArgument, SerializationError) as exc:
                raise type(exc)(f"send_many item {index}: {exc}") from None
        if connection is not None:  # a SQLAlchemy session or connection: what it wraps
            connection = dbapi_connection(connection) or connection
        return self._handles(self.app._enqueue(jobs, connection))

    def _transaction_of(self, kwargs: dict[str, Any]) -> Any:
        """:func:`~rota._connections.transaction_of` for a call of this task."""
        if "connection" not in kwargs:
            return None
        return transaction_of(kwargs, functools.partial(_takes_connection, self.fn))

    def _send_one(self, job: NewJob, connection: Any = None) -> JobHandle[R]:
        return self._handles(self.app._enqueue([job], connection))[0]

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
        """Encode a call as a :class:`NewJob`, resolving its limit and unique keys.

        Arguments must be exact JSON (see :mod:`rota._validate`; tuples become
        lists), else :class:`~rota.errors.SerializationError` names the bad value;
        a call the function cannot take (an argument too many or missing, an
        unknown keyword) raises :class:`~rota.errors.InvalidArgument`."""
        app = self.app
        payload = _json.dumps_call(args, kwargs, cap=app.payload_cap)
        self._check_call(args, kwargs)
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
            unique_key=self._unique_key(o.unique, args, kwargs),
            unique_for=o.unique_for,
            host=o.host,
            retry=encoded_policy(o.backoff, o.retry_on, o.no_retry_on),
        )

    def _check_call(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """Refuse a call that the task's function cannot take: the worker
        would fail every attempt of it with a TypeError."""
        shape = (len(args), frozenset(kwargs))
        try:
            refusal = _refusal(self.fn, *shape)
        except TypeError:  # an unhashable callable object: worked out each time
            refusal = _refusal.__wrapped__(self.fn, *shape)
        if refusal:
            raise InvalidArgument(f"task {self.name!r} cannot take this call: {refusal}")

    def _limit_keys(
        self, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[tuple[ConcurrencyKey, ...], tuple[RateKey, ...], tuple[BreakerKey, ...]]:
        """The task's flow-control keys resolved for one call."""
        o = self.opts
        concurrency = tuple(
            ConcurrencyKey(self._key(c.key, args, kwargs), c.limit) for c in o.concurrency
        )
        rate = tuple(RateKey(self._key(r.key, args, kwargs), r.per_second, r.burst) for r in o.rate)
        breaker = tuple(
            BreakerKey(
                self._key(b.key, args, kwargs),
                b.failures,
                b.cooldown_seconds,
                error_kinds(b.ignore),
            )
            for b in o.breaker
        )
        groups: tuple[tuple[Any, ...], ...] = (concurrency, rate, breaker)
        declared = (o.concurrency, o.rate, o.breaker)
        for name, group, items in zip(_SAME_KEY, groups, declared, strict=True):
            if len(group) > 1:  # keys from functions may meet
                _one_per_key(name, [k.key for k in group], items, self._call_key_words)
        return concurrency, rate, breaker

    def _call_key_words(self, key: str) -> str:
        return f"key {key!r} for this call of task {self.name}"

    def _key(self, spec: KeySpec, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
        key = resolve_key(spec, self.name, args, kwargs, self.fn)
        return key if spec is None or isinstance(spec, str) else _validate.name(key, "limit key")

    def _unique_key(
        self, spec: UniqueSpec, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> str | None:
        if spec is None or spec is False:
            return None
        if spec is True:
            value = _call_digest(self.fn, args, kwargs)
        else:
            value = resolve_key(spec, self.name, args, kwargs, self.fn)
        return f"{self.name}:{value}"


def _call_digest(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    """The hash of a call that ``unique=True`` keys on: the same for every way
    of writing one call of ``fn``.

    The arguments are bound to ``fn``'s parameters (so ``f("a")``,
    ``f(feed="a")`` and ``f("a", full=False)`` are one call when ``full``
    defaults to False) and hashed as JSON with sorted keys at every level, so
    the order of keyword arguments and of dict keys does not count. A default
    that is not JSON counts as not given. A call that fits no parameters
    (refused when sent: :meth:`Task.new_job`) is hashed as written, keyword
    order aside.
    Arguments are JSON already (checked by the payload's encoding)."""
    call: Any = [args, kwargs]  # a list: never equal to a bound call's object
    parameters = _parameters_of(fn)
    if parameters is not None:
        signature, defaults = parameters
        with contextlib.suppress(TypeError):  # fits no parameters: hashed as written
            call = defaults | signature.bind(*args, **kwargs).arguments
    return hashlib.blake2b(_json.canonical(call), digest_size=16).hexdigest()


@functools.lru_cache(maxsize=4096)
def _refusal(fn: Callable[..., Any], positional: int, names: frozenset[str]) -> str | None:
    """Why ``fn`` cannot take a call of ``positional`` arguments and the
    keyword arguments ``names`` (None if it can, or cannot be introspected):
    it depends on nothing else, so is worked out once per shape of call."""
    parameters = _parameters_of(fn)
    if parameters is None:
        return None
    try:
        parameters[0].bind(*range(positional), **dict.fromkeys(names))
    except TypeError as exc:
        return str(exc)
    return None


def _takes_connection(fn: Callable[..., Any]) -> bool:
    """Whether ``fn`` takes a ``connection`` keyword argument (named, or
    through ``**kwargs``); True when it cannot be told."""
    parameters = _parameters_of(fn)
    if parameters is None:
        return True
    found = parameters[0].parameters
    named = found.get("connection")
    if named is not None:
        return named.kind is not inspect.Parameter.POSITIONAL_ONLY
    return any(p.kind is inspect.Parameter.VAR_KEYWORD for p in found.values())


def _parameters_of(fn: Callable[..., Any]) -> tuple[inspect.Signature, dict[str, Any]] | None:
    """:func:`_parameters` of ``fn``, cached unless ``fn`` cannot be hashed."""
    try:
        return _parameters(fn)
    except TypeError:  # an unhashable callable object: worked out each time
        return _parameters.__wrapped__(fn)


@functools.lru_cache(maxsize=1024)
def _parameters(fn: Callable[..., Any]) -> tuple[inspect.Signature, dict[str, Any]] | None:
    """``fn``'s signature and the defaults of its parameters that are JSON,
    worked out once per function; None when ``fn`` cannot be introspected."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    defaults = {}
    for parameter in signature.parameters.values():
        if parameter.default is parameter.empty:
            continue
        try:
            _validate.check_json(parameter.default)
        except SerializationError:
            continue  # an explicit value is JSON, so never equal to this default
        defaults[parameter.name] = parameter.default
    return signature, defaults


__all__ = ["JobHandle", "Task", "TaskOptions"]


def _send_at_time(when: datetime) -> float:
    """``when`` (naive: UTC) in seconds since the epoch, if it is at most 100
    years from now (this machine's clock), the bound of ``send_in``'s delay,
    and not before the earliest time rota keeps."""
    at = to_epoch(when)
    shown = when.isoformat(sep=" ") + ("" if when.tzinfo else " UTC")
    if at - time.time() > _validate.MAX_DURATION:
        raise InvalidArgument(
            f"send_at time {shown} is more than 100 years from now; send_at and send_in "
            "take times at most 100 years ahead"
        )
    early = _validate.time_range_error(at, f"send_at time {shown}")
    if early is not None:
        raise InvalidArgument(early)
    return at
