"""Flow-control declarations for tasks: :class:`Limit`, :class:`Rate`, :class:`Breaker`.

Keys are fixed when a job is sent: a constant string, or a function called
with the job's arguments (for example the host of a URL). The store then
enforces them across every worker without running user code.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rota._time import parse_duration
from rota.errors import InvalidArgument

KeySpec = str | Callable[..., Any] | None

_RATE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*/\s*(\d*)\s*(ms|s|sec|m|min|h|hour|d|day)\s*$")
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


@dataclass(frozen=True, slots=True)
class Limit:
    """At most ``limit`` running jobs per key, cluster-wide: ``Limit("spiders", 4)``."""

    key: KeySpec = None
    limit: int = 1

    def __post_init__(self) -> None:
        if not isinstance(self.limit, int) or self.limit < 1:
            raise InvalidArgument(
                f"concurrency limit must be a positive integer, not {self.limit!r}"
            )


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
        if not isinstance(self.burst, int) or self.burst < 1:
            raise InvalidArgument(f"rate burst must be a positive integer, not {self.burst!r}")
        self.per_second  # noqa: B018  (validates the spec now)

    @property
    def per_second(self) -> float:
        """The refill rate in tokens per second."""
        if isinstance(self.spec, int | float) and not isinstance(self.spec, bool):
            rate = float(self.spec)
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
        if not math.isfinite(rate) or rate <= 0:
            raise InvalidArgument(f"rate must be a positive finite number, not {self.spec!r}")
        return rate


@dataclass(frozen=True, slots=True)
class Breaker:
    """Pause a key after ``failures`` consecutive failures; probe again after ``cooldown``."""

    failures: int = 5
    cooldown: float | str = 60.0
    key: KeySpec = None

    def __post_init__(self) -> None:
        if not isinstance(self.failures, int) or self.failures < 1:
            raise InvalidArgument(
                f"breaker failures must be a positive integer, not {self.failures!r}"
            )
        parse_duration(self.cooldown, what="breaker cooldown")

    @property
    def cooldown_seconds(self) -> float:
        """The cooldown in seconds."""
        return parse_duration(self.cooldown, what="breaker cooldown")
