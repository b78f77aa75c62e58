"""Flow-control declarations for tasks: :class:`Limit`, :class:`Rate`, :class:`Breaker`.

Keys are fixed when a job is sent: a constant string, or a function called
with the job's arguments (for example the host of a URL). The store then
enforces them across every worker without running user code.
"""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rota import _validate
from rota._time import parse_duration
from rota.errors import InvalidArgument

KeySpec = str | Callable[..., Any] | None

_RATE = re.compile(
    r"^\s*(\d{1,15}(?:\.\d{1,15})?)\s*/\s*(\d{0,9})\s*(ms|s|sec|m|min|h|hour|d|day)\s*$"
)
_PER = {
    "ms": 0.001,
    "s": 1,
    "sec": 1,
    "m": 60,
    "min": 60,
    "h": 3600,
    "hour": 3600,
    "d": 86400,
    "day": 86400,
}


Call = tuple[tuple[Any, ...], dict[str, Any]]


@functools.lru_cache(maxsize=1024)
def key_caller(spec: Callable[..., Any], task_fn: Callable[..., Any]) -> Callable[[Call], Any]:
    """How to call the key function ``spec`` with a call of ``task_fn``, decided
    once from both signatures:

    - a key function that takes ``*args`` and ``**kwargs``, or whose
      parameters bind the task's own, gets the call as it is;
    - one whose parameters are all named like the task's gets those arguments
      by name (``lambda depth: ...`` on ``fetch(url, depth)``); with
      ``**kwargs`` it gets every argument of the call by name, defaults filled
      in (``lambda **kw: ...`` on ``fetch(url, depth=1)`` sent as
      ``fetch.send(u)`` gets ``url=u, depth=1``);
    - else it gets the task's first arguments by position (``lambda u: ...``
      on ``fetch(url, depth)`` gets ``url``).

    A key function that can take none of these raises :class:`InvalidArgument`.
    """
    try:
        key_sig, task_sig = inspect.signature(spec), inspect.signature(task_fn)
    except (TypeError, ValueError):  # not introspectable: pass the call through
        return _whole_call(spec)
    kinds = inspect.Parameter
    params = list(key_sig.parameters.values())
    task_names = [p.name for p in task_sig.parameters.values() if p.kind not in _VARIADIC]
    if _binds(key_sig, task_sig) or {p.kind for p in params} >= _VARIADIC:
        return _whole_call(spec)
    named = [p for p in params if p.kind not in _VARIADIC]
    if all(p.name in task_names and p.kind is not kinds.POSITIONAL_ONLY for p in named):
        takes_all = kinds.VAR_KEYWORD in {p.kind for p in params}
        return _by_name(spec, task_sig, None if takes_all else [p.name for p in named])
    required = [p for p in named if p.default is p.empty]
    takes_rest = kinds.VAR_POSITIONAL in {p.kind for p in params}
    if all(p.kind is not kinds.KEYWORD_ONLY for p in required) and (
        len(required) <= len(task_names) or takes_rest
    ):
        count = None if takes_rest else sum(p.kind is not kinds.KEYWORD_ONLY for p in named)
        return _by_position(spec, task_sig, count)
    name = getattr(spec, "__name__", repr(spec))
    raise InvalidArgument(
        f"key function {name}{key_sig} cannot take the arguments of "
        f"{getattr(task_fn, '__name__', 'the task')}{task_sig}: give it the task's "
        "parameters (by name or by position), or *args and **kwargs"
    )


_VARIADIC = {inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD}


def _binds(key_sig: inspect.Signature, task_sig: inspect.Signature) -> bool:
    """Whether the key function accepts exactly the task's parameters."""
    return [(p.name, p.kind) for p in key_sig.parameters.values()] == [
        (p.name, p.kind) for p in task_sig.parameters.values()
    ]


def _whole_call(spec: Callable[..., Any]) -> Callable[[Call], Any]:
    return lambda call: spec(*call[0], **call[1])


def _bound(task_sig: inspect.Signature, call: Call) -> inspect.BoundArguments:
    try:
        bound = task_sig.bind(*call[0], **call[1])
    except TypeError as exc:
        raise InvalidArgument(f"the arguments do not fit the task: {exc}") from None
    bound.apply_defaults()
    return bound


def _by_name(
    spec: Callable[..., Any], task_sig: inspect.Signature, names: list[str] | None
) -> Callable[[Call], Any]:
    """Call ``spec`` with the arguments ``names`` of a call (None: all of them,
    those a task's ``**kwargs`` gathered as they were given)."""

    def call_key(call: Call) -> Any:
        arguments = _bound(task_sig, call).arguments
        if names is not None:
            return spec(**{name: arguments[name] for name in names if name in arguments})
        given: dict[str, Any] = {}
        for name, value in arguments.items():
            kind = task_sig.parameters[name].kind
            given.update(value if kind is inspect.Parameter.VAR_KEYWORD else {name: value})
        return spec(**given)

    return call_key


def _by_position(
    spec: Callable[..., Any], task_sig: inspect.Signature, count: int | None
) -> Callable[[Call], Any]:
    def call_key(call: Call) -> Any:
        values = _bound(task_sig, call).args
        return spec(*(values if count is None else values[:count]))

    return call_key


def resolve_key(
    spec: KeySpec,
    default: str,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    task_fn: Callable[..., Any] | None = None,
) -> str:
    """The key for one job: the constant, the function's value, or ``default``.
    With ``task_fn``, the key function gets the arguments it accepts
    (:func:`key_caller`); without, the whole call."""
    if spec is None:
        return default
    if isinstance(spec, str):
        return spec
    try:
        value = key_caller(spec, task_fn)((args, kwargs)) if task_fn else spec(*args, **kwargs)
    except Exception as exc:  # the caller's code: said as a refusal of this call, cause kept
        raise InvalidArgument(
            f"key function {getattr(spec, '__name__', spec)!r} raised {type(exc).__name__}: {exc}"
        ) from exc
    if value is None or value == "":
        raise InvalidArgument(
            f"key function {getattr(spec, '__name__', spec)!r} returned {value!r}"
        )
    return str(value)


def check_key_spec(spec: object, what: str) -> None:
    """Refuse a key that is neither None, a valid name, nor a function."""
    if spec is None or callable(spec):
        return
    if not isinstance(spec, str):
        raise InvalidArgument(f"{what} key must be a string or a function, not {spec!r}")
    _validate.name(spec, f"{what} key")


@dataclass(frozen=True, slots=True)
class Limit:
    """At most ``limit`` running jobs per key, cluster-wide: ``Limit("spiders", 4)``."""

    key: KeySpec = None
    limit: int = 1

    def __post_init__(self) -> None:
        _validate.integer(self.limit, "concurrency limit", 1, _validate.MAX_LIMIT)
        check_key_spec(self.key, "concurrency limit")


@dataclass(frozen=True, slots=True)
class Rate:
    """A token bucket per key: ``Rate("2/s", burst=5, key=host_of)``.

    ``spec`` is ``"N/s"``, ``"N/m"``, ``"N/h"``, ``"N/10s"`` or a float of
    jobs per second. ``burst`` defaults to 1 (no bursts).
    """

    spec: str | float
    burst: int = 1
    key: KeySpec = None

    def __post_init__(self) -> None:
        _validate.integer(self.burst, "rate burst", 1, _validate.MAX_LIMIT)
        check_key_spec(self.key, "rate")
        self.per_second  # noqa: B018  (validates the spec now)

    @property
    def per_second(self) -> float:
        """The refill rate in tokens per second."""
        if isinstance(self.spec, bool):
            raise InvalidArgument(
                f"rate must be a number or a string like '2/s', not {self.spec!r}"
            )
        if isinstance(self.spec, int | float):
            rate = float(self.spec) if abs(self.spec) <= _validate.MAX_RATE else -1.0
        else:
            match = _RATE.match(str(self.spec))
            if not match:
                raise InvalidArgument(
                    f"rate {self.spec!r} is not valid; use e.g. '2/s', '100/m', '5/10s'"
                )
            count, multiple, unit = match.groups()
            window = int(multiple or 1) * _PER[unit]
            if window <= 0:
                raise InvalidArgument(f"rate {self.spec!r} has an empty time window")
            rate = float(count) / window
        if not _validate.MIN_RATE <= rate <= _validate.MAX_RATE:  # false for NaN too
            raise InvalidArgument(
                f"rate must be from one per 100 years to {_validate.MAX_RATE:,.0f} per second, "
                f"not {self.spec!r}"
            )
        return rate


@dataclass(frozen=True, slots=True)
class Breaker:
    """Pause a key after ``failures`` consecutive failures; probe again after ``cooldown``.

    The threshold holds with any number of workers: at most ``failures``
    consecutive failures of the key happen before the breaker opens, because
    the store admits a job only while the jobs of the key in flight are fewer
    than the failures it has left. So, while closed, at most ``failures`` jobs
    of the key run at once. Once open, none starts for ``cooldown`` (seconds,
    or ``"90s"``, ``"5m"``); then one probe job runs: its success closes the
    breaker, its failure opens it for another cooldown.

    A failure on an exception of one of the ``ignore`` classes (or of their
    subclasses) counts neither way: it leaves the consecutive failures and
    an open breaker as they were, and a probe that ends so is followed by
    another. Name there the errors that say nothing about what the key
    stands for: a bug in the job's own code, a refusal of its input, a
    throttle handled elsewhere.
    """

    failures: int = 5
    cooldown: float | str = 60.0
    key: KeySpec = None
    ignore: tuple[type[BaseException], ...] = ()

    def __post_init__(self) -> None:
        _validate.integer(self.failures, "breaker failures", 1, _validate.MAX_LIMIT)
        check_key_spec(self.key, "breaker")
        parse_duration(self.cooldown, what="breaker cooldown")
        ignore = _validate.exception_classes(self.ignore, "breaker ignore")
        object.__setattr__(self, "ignore", ignore)

    @property
    def cooldown_seconds(self) -> float:
        """The cooldown in seconds."""
        return parse_duration(self.cooldown, what="breaker cooldown")
