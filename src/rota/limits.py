"""Flow-control declarations for tasks: :class:`Limit`, :class:`Rate`, :class:`Breaker`.

Keys are fixed when a job is sent: a constant string, or a function called
with the job's arguments (for example the host of a URL). The store then
enforces them across every worker without running user code.
"""

from __future__ import annotations

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


def resolve_key(spec: KeySpec, default: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    """The key for one job: the constant, the function's value, or ``default``."""
    if spec is None:
        return default
    if isinstance(spec, str):
        return spec
    value = spec(*args, **kwargs)
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
    """Pause a key after ``failures`` consecutive failures; probe again after ``cooldown``."""

    failures: int = 5
    cooldown: float | str = 60.0
    key: KeySpec = None

    def __post_init__(self) -> None:
        _validate.integer(self.failures, "breaker failures", 1, _validate.MAX_LIMIT)
        check_key_spec(self.key, "breaker")
        parse_duration(self.cooldown, what="breaker cooldown")

    @property
    def cooldown_seconds(self) -> float:
        """The cooldown in seconds."""
        return parse_duration(self.cooldown, what="breaker cooldown")
