"""How a host's pace adapts to what the host says: pure arithmetic, no I/O.

A host's *level* is how many of its fetches may run at once, from 1 to the
crawler's ``per_host`` ceiling; the store holds it as the concurrency
override of the host's key (:mod:`rota.crawl.pacing` reads and writes it),
so every worker of the cluster obeys it at claim time. Each worker process
watches the responses it gets from the host (:class:`Health`) and moves the
level:

- **throttled** (429, or 503, with or without ``Retry-After``): the host is
  paused for :func:`pause_seconds`, then comes back at half its level;
- **error** (another 5xx, a refused connection, a timeout): half the level;
- **slow** (the moving average of its response times rose above both
  ``slow_factor`` times and ``slow_margin`` seconds more than the best it
  has shown): one less;
- **ok**: every ``ramp_every`` healthy responses in a row, one more, up to
  the ceiling (healthy responses at the ceiling bank nothing for later).

Levels never go below 1 except while paused (0), nor above the ceiling.
"""

from __future__ import annotations

import email.utils
import math
from dataclasses import dataclass, replace
from enum import StrEnum

from rota import _validate
from rota._time import parse_duration
from rota.errors import InvalidArgument

__all__ = [
    "Adaptive",
    "Event",
    "Health",
    "after_pause",
    "classify",
    "next_level",
    "observe",
    "parse_retry_after",
    "pause_seconds",
]


class Event(StrEnum):
    """What one response says about its host."""

    OK = "ok"
    SLOW = "slow"
    ERROR = "error"
    THROTTLED = "throttled"


#: A host's first pause when it throttles without a Retry-After (seconds).
_PAUSE = 5.0


@dataclass(frozen=True, slots=True)
class Adaptive:
    """How fast a host's level moves (see the module's docstring).

    ``pause`` is the first pause of a host that throttles without saying for
    how long (``Retry-After``); it doubles with each throttle in a row, up to
    ``max_pause``, which also caps a longer ``Retry-After``.
    """

    ramp_every: int = 20
    slow_factor: float = 2.0
    slow_margin: float | str = 0.25
    pause: float | str = _PAUSE
    max_pause: float | str = "1h"
    smoothing: float = 0.3

    def __post_init__(self) -> None:
        _validate.integer(self.ramp_every, "ramp_every", 1, _validate.MAX_LIMIT)
        if not _finite(self.slow_factor) or self.slow_factor < 1.0:
            raise InvalidArgument(f"slow_factor must be a number from 1, not {self.slow_factor!r}")
        if not _finite(self.smoothing) or not 0.0 < self.smoothing <= 1.0:
            raise InvalidArgument(
                f"smoothing must be a number above 0 and at most 1, not {self.smoothing!r}"
            )
        margin = parse_duration(self.slow_margin, what="slow_margin")
        first = parse_duration(self.pause, what="pause", positive=True)
        longest = parse_duration(self.max_pause, what="max_pause", positive=True)
        if longest < first:
            hint = ", its default: give pause= too" if self.pause == _PAUSE else ""
            raise InvalidArgument(f"max_pause ({longest:g} s) is below pause ({first:g} s{hint})")
        object.__setattr__(self, "slow_margin", margin)
        object.__setattr__(self, "pause", first)
        object.__setattr__(self, "max_pause", longest)


def _finite(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


@dataclass(frozen=True, slots=True)
class Health:
    """One host as one worker process has seen it lately."""

    #: Moving average of its response times, in seconds (None: none seen yet).
    average: float | None = None
    #: The best average it has shown; it creeps up towards the average (1 %
    #: of the gap per response), so a host that stays slower for good stops
    #: counting as slow.
    best: float | None = None
    #: Healthy responses in a row since its level last changed.
    streak: int = 0
    #: Throttled responses in a row.
    throttles: int = 0


def observe(health: Health, seconds: float, config: Adaptive) -> Health:
    """``health`` after one more response that took ``seconds``."""
    seconds = max(0.0, seconds)
    if health.average is None or health.best is None:
        return replace(health, average=seconds, best=seconds)
    average = health.average + config.smoothing * (seconds - health.average)
    best = min(average, health.best + 0.01 * max(0.0, average - health.best))
    return replace(health, average=average, best=best)


def classify(status: int | None, health: Health, config: Adaptive) -> Event:
    """The event of a response with ``status`` (None: no response at all) to
    a host in ``health`` (already updated with this response's time)."""
    if status in (429, 503):
        return Event.THROTTLED
    if status is None or status >= 500:
        return Event.ERROR
    if health.average is not None and health.best is not None:
        margin = float(config.slow_margin)
        threshold = max(health.best * config.slow_factor, health.best + margin)
        if health.average > threshold:
            return Event.SLOW
    return Event.OK


def next_level(
    level: int, ceiling: int, event: Event, health: Health, config: Adaptive
) -> tuple[int, Health]:
    """The host's level after ``event``, and the health to keep.

    ``level`` is the level in force (0 while paused: nothing changes then
    but the throttle count). A throttle returns the level *after* the pause
    (:func:`after_pause`); the caller pauses the host first.
    """
    if event is Event.THROTTLED:
        health = replace(health, streak=0, throttles=health.throttles + 1)
        return (after_pause(level, ceiling) if level > 0 else 0), health
    if level <= 0:
        return 0, replace(health, streak=0)
    if event is Event.ERROR:
        return max(1, level // 2), replace(health, streak=0, throttles=0)
    if event is Event.SLOW:
        return max(1, level - 1), replace(health, streak=0, throttles=0)
    if level >= ceiling:  # no credit banked at the top for after a fall
        return ceiling, replace(health, streak=0, throttles=0)
    streak = health.streak + 1
    if streak >= config.ramp_every:
        return level + 1, replace(health, streak=0, throttles=0)
    return level, replace(health, streak=streak, throttles=0)


def after_pause(level: int, ceiling: int) -> int:
    """The level a host comes back at after a pause: half the level it had."""
    return max(1, min(level, ceiling) // 2)


def pause_seconds(retry_after: float | None, throttles: int, config: Adaptive) -> float:
    """How long to pause a host that throttled: what its ``Retry-After``
    says (at least a second), else ``pause`` doubled for each earlier
    throttle in a row; never more than ``max_pause``."""
    longest = float(config.max_pause)
    if retry_after is not None:
        return min(longest, max(1.0, retry_after))
    return min(longest, float(config.pause) * 2.0 ** min(max(0, throttles - 1), 32))


def parse_retry_after(value: str | None, now: float) -> float | None:
    """Seconds to wait from a ``Retry-After`` header: a number of seconds or
    an HTTP date (``now``: the current time, seconds since the epoch); None
    when absent or unreadable."""
    if value is None:
        return None
    text = value.strip()
    if text.isdigit():
        return float(text)
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - now)
