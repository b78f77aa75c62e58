"""When a schedule fires: triggers and the misfire arithmetic.

Everything here is a pure function of the times passed in, as float seconds
since the Unix epoch (UTC). Nothing reads a clock, touches a store or sleeps:
the scheduler loop passes ``now`` and stores what :func:`plan_fires` returns.

Fire times are computed the same way on every machine, so that the job id
derived from ``(schedule, fire time)`` is the same whichever scheduler fires.
"""

from __future__ import annotations

import hashlib
import math
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from rota import _validate
from rota._time import shown_utc
from rota.errors import InvalidSchedule
from rota.scheduling._cron import CronExpression, time_zone

__all__ = [
    "AtTrigger",
    "CronTrigger",
    "FirePlan",
    "IntervalTrigger",
    "Trigger",
    "at",
    "cron",
    "every",
    "jitter_offset",
    "plan_fires",
    "time_zone",
    "trigger_from_input",
    "trigger_from_json",
]

MISFIRE_POLICIES = ("coalesce", "all")


class Trigger(ABC):
    """When a schedule fires.

    Subclasses implement :meth:`next_fire`, :meth:`to_json` and
    :meth:`describe`. :meth:`count_fires` and :meth:`last_fires` have generic
    versions; triggers that can count without walking every fire override them
    so that catching up after long downtime stays cheap.
    """

    @abstractmethod
    def next_fire(self, after: float) -> float | None:
        """The first fire time strictly after ``after``; None once exhausted."""

    @abstractmethod
    def to_json(self) -> dict[str, Any]:
        """A JSON-safe dict with a ``"type"`` key; :func:`trigger_from_json` inverts it."""

    @abstractmethod
    def describe(self) -> str:
        """The trigger in words, for the dashboard and the CLI."""

    def first_fire(self, now: float) -> float | None:
        """The first fire at or after ``now``: the next fire of a new schedule."""
        return self.next_fire(math.nextafter(now, -math.inf))

    def fires_from(self, first: float | None, count: int) -> list[float]:
        """``first`` and the fires after it, ``count`` at most (fewer when
        the trigger ends; none when ``first`` is None)."""
        fires: list[float] = []
        fire = first
        while fire is not None and len(fires) < count:
            fires.append(fire)
            fire = self.next_fire(fire)
        return fires

    def count_fires(self, after: float, until: float) -> int:
        """How many fire times ``t`` satisfy ``after < t <= until``."""
        return sum(1 for _ in self._fires(after, until))

    def last_fires(self, after: float, until: float, n: int) -> list[float]:
        """The last ``n`` fire times in ``(after, until]``, oldest first.

        Narrows the window by bisection on :meth:`count_fires`, then walks the
        few fires left, so it is cheap whenever counting is.
        """
        if n <= 0:
            return []
        lo, hi = after, until
        if self.count_fires(lo, until) > 2 * n:
            for _ in range(200):
                mid = lo + (hi - lo) / 2
                if not lo < mid < hi:
                    break
                found = self.count_fires(mid, until)
                if found < n:
                    hi = mid
                else:
                    lo = mid
                    if found <= 2 * n:
                        break
        return list(self._fires(lo, until))[-n:]

    def _fires(self, after: float, until: float) -> Iterator[float]:
        t = self.next_fire(after)
        while t is not None and t <= until:
            yield t
            t = self.next_fire(t)


# -- at ---------------------------------------------------------------------


@dataclass(frozen=True)
class AtTrigger(Trigger):
    """Fires once, at ``time``."""

    time: float

    def __post_init__(self) -> None:
        _check_time("at() time", self.time)

    def next_fire(self, after: float) -> float | None:
        return self.time if self.time > after else None

    def first_fire(self, now: float) -> float | None:
        # A one-shot whose time passed while nothing ran still fires once;
        # plan_fires' grace decides whether it is too late.
        return self.time

    def to_json(self) -> dict[str, Any]:
        return {"type": "at", "time": self.time}

    def describe(self) -> str:
        return f"at {_format_time(self.time)}"


def at(when: datetime) -> Trigger:
    """Fire once at ``when``; a naive datetime is taken as UTC."""
    return AtTrigger(_epoch(when, "at() time"))


# -- every ------------------------------------------------------------------


@dataclass(frozen=True)
class IntervalTrigger(Trigger):
    """Fires at ``start + k * interval`` for k >= 0, and never at or after ``end``
    (nor past the latest time rota keeps, 9999-12-31 00:00 UTC).

    Without a start the anchor is the Unix epoch, so every machine computes
    the same aligned times (``every(minutes=15)`` fires at :00, :15, :30, :45).
    """

    interval: float
    start: float | None = None
    end: float | None = None

    def __post_init__(self) -> None:
        if not (math.isfinite(self.interval) and self.interval > 0):
            raise InvalidSchedule(
                f"every() needs an interval greater than zero, got {self.interval!r} seconds"
            )
        if self.interval > _validate.MAX_DURATION:
            raise InvalidSchedule(
                f"every() interval of {self.interval:g} s is more than 100 years "
                f"({_validate.MAX_DURATION:.0f} s), the longest rota takes"
            )
        if self.start is not None:
            _check_time("every() start", self.start)
        if self.end is not None:
            _check_time("every() end", self.end)
            if self.start is not None and self.end <= self.start:
                raise InvalidSchedule(
                    f"every() end ({_format_time(self.end)}) must be after its start "
                    f"({_format_time(self.start)})"
                )

    @property
    def _anchor(self) -> float:
        return 0.0 if self.start is None else self.start

    @property
    def _stop(self) -> float:
        """Fires are before this: ``end``, and never past the latest time rota keeps."""
        past_last = math.nextafter(_validate.MAX_TIME, math.inf)
        return past_last if self.end is None else min(self.end, past_last)

    def _at(self, k: int) -> float:
        return self._anchor + k * self.interval

    def _index_after(self, t: float) -> int:
        """The smallest k >= 0 whose fire is strictly after ``t``.

        Estimated arithmetically, then corrected against the exact float
        ``anchor + k * interval`` so every machine agrees on the boundary.
        """
        if t < self._anchor:
            return 0
        k = max(0, math.floor((t - self._anchor) / self.interval))
        while k > 0 and self._at(k - 1) > t:
            k -= 1
        while self._at(k) <= t:
            k += 1
        return k

    def _last_index(self, until: float) -> int:
        """The largest k whose fire is at or before ``until`` and before ``end`` (may be -1)."""
        last = self._index_after(until) - 1
        return min(last, self._index_after(math.nextafter(self._stop, -math.inf)) - 1)

    def next_fire(self, after: float) -> float | None:
        t = self._at(self._index_after(after))
        return None if t >= self._stop else t

    def count_fires(self, after: float, until: float) -> int:
        return max(0, self._last_index(until) - self._index_after(after) + 1)

    def last_fires(self, after: float, until: float, n: int) -> list[float]:
        last = self._last_index(until)
        first = max(self._index_after(after), last - n + 1)
        return [self._at(k) for k in range(first, last + 1)]

    def to_json(self) -> dict[str, Any]:
        return {"type": "every", "interval": self.interval, "start": self.start, "end": self.end}

    def describe(self) -> str:
        text = f"every {_format_interval(self.interval)}"
        if self.start is not None:
            text += f" from {_format_time(self.start)}"
        if self.end is not None:
            text += f" until {_format_time(self.end)}"
        return text


def every(
    interval: timedelta | float | None = None,
    *,
    seconds: float = 0,
    minutes: float = 0,
    hours: float = 0,
    days: float = 0,
    start: datetime | None = None,
    end: datetime | None = None,
) -> Trigger:
    """Fire every ``interval`` (a timedelta or seconds), or the sum of the unit keywords.

    Fires at ``start + k * interval`` (k >= 0), anchored at the Unix epoch when
    ``start`` is not given, and never at or after ``end``. Naive datetimes are UTC.
    """
    units = seconds + 60 * minutes + 3600 * hours + 86400 * days
    if interval is None:
        total = float(units)
    elif units:
        raise InvalidSchedule(
            "every() takes the interval either as its first argument or as "
            "seconds=/minutes=/hours=/days=, not both"
        )
    elif isinstance(interval, timedelta):
        total = interval.total_seconds()
    elif isinstance(interval, int | float) and not isinstance(interval, bool):
        total = float(interval)
    else:
        raise InvalidSchedule(
            f"every() interval must be a timedelta or a number of seconds, "
            f"got {type(interval).__name__}"
        )
    return IntervalTrigger(
        total,
        None if start is None else _epoch(start, "every() start"),
        None if end is None else _epoch(end, "every() end"),
    )


# -- cron -------------------------------------------------------------------


@dataclass(frozen=True)
class CronTrigger(Trigger):
    """Fires at the wall-clock times matched by a cron expression in zone ``tz``.

    Five fields, or six with **seconds first**; aliases such as ``@daily``.
    Daylight saving time: a wall time in the spring-forward gap is skipped; a
    repeated wall time fires once, unless the hour field matches every hour
    (``*``, ``*/1``, ``0-23``). The rules
    and the arithmetic are in :class:`rota.scheduling._cron.CronExpression`.
    """

    expr: str
    tz: str = "UTC"
    _cron: CronExpression = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.expr, str):
            raise InvalidSchedule(f"cron expression must be a string, got {self.expr!r}")
        object.__setattr__(self, "expr", " ".join(self.expr.split()))
        object.__setattr__(self, "_cron", CronExpression(self.expr, self.tz))

    def next_fire(self, after: float) -> float | None:
        return self._cron.next_fire(after)

    def count_fires(self, after: float, until: float) -> int:
        return self._cron.count_fires(after, until)

    def to_json(self) -> dict[str, Any]:
        return {"type": "cron", "expr": self.expr, "tz": self.tz}

    def describe(self) -> str:
        return f"cron {self.expr} ({self.tz})"


def cron(expr: str, tz: str = "UTC") -> Trigger:
    """Fire on a cron expression evaluated in the IANA zone ``tz``.

    ``"*/15 * * * *"`` is five fields (minute hour day-of-month month
    day-of-week). Six fields put **seconds first**: ``"*/5 * * * * *"`` fires
    every five seconds, ``"30 0 3 * * *"`` at 03:00:30. See
    :class:`CronTrigger` for daylight saving time.
    """
    return CronTrigger(expr, tz)


# -- JSON -------------------------------------------------------------------


def trigger_from_json(data: Mapping[str, Any]) -> Trigger:
    """Rebuild a trigger from :meth:`Trigger.to_json` output."""
    kind = data.get("type") if isinstance(data, Mapping) else None
    try:
        if kind == "at":
            return AtTrigger(_number(data["time"], "at time"))
        if kind == "every":
            start, end = data.get("start"), data.get("end")
            return IntervalTrigger(
                _number(data["interval"], "every interval"),
                None if start is None else _number(start, "every start"),
                None if end is None else _number(end, "every end"),
            )
        if kind == "cron":
            return CronTrigger(str(data["expr"]), str(data.get("tz", "UTC")))
    except KeyError as exc:
        raise InvalidSchedule(f"{kind} trigger is missing {exc.args[0]!r} in {data!r}") from None
    raise InvalidSchedule(f"unknown trigger type {kind!r} in {data!r}; expected at, every or cron")


#: The fields of each kind of trigger's JSON (:meth:`Trigger.to_json`).
_FIELDS = {
    "at": ("type", "time"),
    "every": ("type", "interval", "start", "end"),
    "cron": ("type", "expr", "tz"),
}


def trigger_from_input(data: Mapping[str, Any]) -> Trigger:
    """:func:`trigger_from_json` of a trigger a caller wrote (the REST API,
    ``app.admin``), refusing fields its type does not have: a ``tz`` on an
    ``every`` trigger would otherwise be dropped without a word."""
    kind = data.get("type") if isinstance(data, Mapping) else None
    fields = _FIELDS.get(kind, ()) if isinstance(kind, str) else ()
    unknown = sorted(set(data) - set(fields)) if fields else []
    if unknown:
        raise InvalidSchedule(
            f"{kind} trigger has no field {', '.join(map(repr, unknown))}; "
            f"its fields are {', '.join(fields[1:])}"
        )
    return trigger_from_json(data)


def _number(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidSchedule(f"{what} must be a number, got {value!r}")
    return float(value)


# -- firing -----------------------------------------------------------------


@dataclass(frozen=True)
class FirePlan:
    """What the scheduler does with a schedule whose next fire is due."""

    fires: tuple[float, ...]
    """Fire times to enqueue a job for, oldest first."""
    dropped: int
    """Due fires not enqueued: coalesced into a later one, or older than the grace."""
    next_fire: float | None
    """The schedule's new next fire time (None: the trigger is exhausted)."""
    late: int = 0
    """Of the dropped fires, how many were older than the grace. The rest were
    coalesced (``misfire="coalesce"``) or over ``max_catchup`` (``"all"``)."""


def plan_fires(
    trigger: Trigger,
    next_fire: float,
    now: float,
    misfire: str = "coalesce",
    grace: float | None = None,
    max_catchup: int = 100,
) -> FirePlan:
    """Decide which due fires of a schedule to enqueue at ``now``.

    The due fires are the stored ``next_fire`` and every trigger fire after it
    up to ``now``. With ``misfire="coalesce"`` (the default) one job is
    enqueued for the latest; with ``"all"`` one per due fire, at most
    ``max_catchup`` (the newest; older ones are dropped). With ``grace`` set,
    fires older than ``now - grace`` are dropped, so a coalesced fire whose
    latest due time is too old enqueues nothing. Counting is arithmetic for
    ``every`` and per-day for ``cron``, so a week of missed per-second fires
    costs no more than a few.
    """
    if misfire not in MISFIRE_POLICIES:
        raise InvalidSchedule(f"misfire policy must be 'coalesce' or 'all', not {misfire!r}")
    if grace is not None and not (math.isfinite(grace) and grace >= 0):
        raise InvalidSchedule(f"misfire grace must be a number of seconds >= 0, not {grace!r}")
    if isinstance(max_catchup, bool) or not isinstance(max_catchup, int) or max_catchup < 1:
        raise InvalidSchedule(f"max_catchup must be an integer >= 1, not {max_catchup!r}")
    if next_fire > now:
        return FirePlan((), 0, next_fire)

    later = trigger.count_fires(next_fire, now)  # due fires after the stored one
    due = 1 + later
    stale = 0
    if grace is not None and now - grace > next_fire:
        cutoff = now - grace
        stale = 1 + trigger.count_fires(next_fire, math.nextafter(cutoff, -math.inf))
    keep = min(due - stale, 1 if misfire == "coalesce" else max_catchup)
    if keep <= later:
        fires = trigger.last_fires(next_fire, now, keep)
    else:
        fires = [next_fire, *trigger.last_fires(next_fire, now, later)]
    return FirePlan(tuple(fires), due - keep, trigger.next_fire(now), late=stale)


def jitter_offset(name: str, fire_time: float, jitter: float) -> float:
    """A delay in ``[0, jitter)`` seconds for one fire of schedule ``name``.

    Derived from a hash of ``(name, fire_time)``, so every scheduler computes
    the same delay for the same fire; ``0.0`` when ``jitter`` is 0.
    """
    if not (math.isfinite(jitter) and jitter >= 0):
        raise InvalidSchedule(f"jitter must be a number of seconds >= 0, not {jitter!r}")
    if jitter == 0:
        return 0.0
    key = f"{name}\x00{float(fire_time)!r}".encode()
    digest = hashlib.blake2b(key, digest_size=8).digest()
    fraction = (int.from_bytes(digest, "big") >> 11) / 2.0**53
    return min(fraction * jitter, math.nextafter(jitter, 0.0))


# -- small helpers ----------------------------------------------------------


def _epoch(when: datetime, what: str) -> float:
    if not isinstance(when, datetime):
        raise InvalidSchedule(f"{what} must be a datetime, got {type(when).__name__}")
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.timestamp()


def _check_time(what: str, value: float) -> None:
    """A finite number of epoch seconds within the times rota keeps."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InvalidSchedule(f"{what} must be a finite number of epoch seconds, got {value!r}")
    refused = _validate.time_range_error(value, f"{what} {_format_time(value)}")
    if refused is not None:
        raise InvalidSchedule(refused)


def _format_time(t: float) -> str:
    """``2026-05-01 12:00 UTC`` (seconds and fractions when there are some);
    ``epoch -90000000000.0`` for a time no date holds."""
    moment = shown_utc(t)
    if moment is None:
        return f"epoch {t!r}"
    text = moment.replace(tzinfo=None).isoformat(sep=" ")
    if moment.microsecond:
        return text.rstrip("0") + " UTC"
    return (text if moment.second else text[:-3]) + " UTC"


def _format_interval(total: float) -> str:
    if total != int(total):
        return f"{total:g} seconds"
    remaining = int(total)
    parts: list[tuple[int, str]] = []
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60), ("second", 1)):
        count, remaining = divmod(remaining, size)
        if count:
            parts.append((count, unit))
    if len(parts) == 1 and parts[0][0] == 1:
        return parts[0][1]  # "every hour"
    return " ".join(f"{count} {unit}{'s' if count != 1 else ''}" for count, unit in parts)
