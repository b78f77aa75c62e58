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
import re
from abc import ABC, abstractmethod
from bisect import bisect_left, bisect_right
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import CroniterBadDateError, CroniterError, croniter

from rota.errors import InvalidSchedule

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
    "trigger_from_json",
]

MISFIRE_POLICIES = ("coalesce", "all")

_EPOCH = datetime(1970, 1, 1)
_SECOND = timedelta(seconds=1)


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
        _check_finite("at() time", self.time)

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
    """Fires at ``start + k * interval`` for k >= 0, and never at or after ``end``.

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
        if self.start is not None:
            _check_finite("every() start", self.start)
        if self.end is not None:
            _check_finite("every() end", self.end)
            if self.start is not None and self.end <= self.start:
                raise InvalidSchedule(
                    f"every() end ({_format_time(self.end)}) must be after its start "
                    f"({_format_time(self.start)})"
                )

    @property
    def _anchor(self) -> float:
        return 0.0 if self.start is None else self.start

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
        if self.end is not None:
            last = min(last, self._index_after(math.nextafter(self.end, -math.inf)) - 1)
        return last

    def next_fire(self, after: float) -> float | None:
        t = self._at(self._index_after(after))
        return None if self.end is not None and t >= self.end else t

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

_FIELDS = ("minute", "hour", "day of month", "month", "day of week")
_ALIASES = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
# croniter's R (random) and H (hashed) values would differ between schedulers.
_RANDOM_OR_HASHED = re.compile(r"(?<![a-z])[hr](?![a-z])", re.IGNORECASE)


@dataclass(frozen=True)
class CronTrigger(Trigger):
    """Fires at the wall-clock times matched by a cron expression in zone ``tz``.

    Five fields are ``minute hour day-of-month month day-of-week``; six fields
    put seconds first: ``second minute hour day-of-month month day-of-week``
    (``"*/5 * * * * *"`` is every five seconds). Aliases such as ``@daily``
    are accepted. Day-of-month and day-of-week, when both are restricted,
    match either (classic cron).

    Daylight saving time, decided on local wall times:

    * a wall time that does not exist (the spring-forward gap) is skipped;
    * a wall time that happens twice (fall back) fires once, at its first
      occurrence, unless the hour field is ``*``: an hourly or sub-hourly
      expression keeps firing through the repeated hour, as elapsed time
      goes on (the way cron daemons treat wildcard-hour jobs).
    """

    expr: str
    tz: str = "UTC"
    _zone: ZoneInfo = field(init=False, repr=False, compare=False)
    _croniter_expr: str = field(init=False, repr=False, compare=False)
    _seconds_first: bool = field(init=False, repr=False, compare=False)
    _day_expr: str = field(init=False, repr=False, compare=False)
    _times: tuple[list[int], list[int], list[int]] = field(init=False, repr=False, compare=False)
    _every_hour: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.expr, str):
            raise InvalidSchedule(f"cron expression must be a string, got {self.expr!r}")
        object.__setattr__(self, "expr", " ".join(self.expr.split()))
        fields = _cron_fields(self.expr)
        seconds_first = len(fields) == 6
        expanded = _expand(self.expr, fields, seconds_first)
        hours, minutes = _values(expanded[1], 24), _values(expanded[0], 60)
        seconds = _values(expanded[5], 60) if seconds_first else [0]
        set_ = object.__setattr__
        set_(self, "_zone", _zone(self.tz))
        set_(self, "_croniter_expr", " ".join(fields))
        set_(self, "_seconds_first", seconds_first)
        set_(self, "_day_expr", "0 0 " + " ".join(fields[-3:]))
        set_(self, "_times", (hours, minutes, seconds))
        set_(self, "_every_hour", len(hours) == 24)
        try:
            next(self._walls(datetime(2000, 1, 1)))
        except CroniterBadDateError:
            raise InvalidSchedule(
                f"cron expression {self.expr!r} never fires: no date matches its day and month"
            ) from None

    # Fire times are the integer instants t whose local wall time matches the
    # expression, and that are the first occurrence of that wall time (fold 0)
    # unless the hour field is '*'. next_fire walks matching wall times with
    # croniter in two views: each wall's first occurrence, and (hour '*') its
    # second one. Each view maps walls to instants monotonically, so the first
    # instant after `after` in either view is found by walking forward.

    def next_fire(self, after: float) -> float | None:
        # Fires fall on whole seconds, so "after the whole second" is the same
        # question, and it survives datetime's rounding to microseconds.
        after = math.floor(after)
        local = datetime.fromtimestamp(after, self._zone)
        wall = local.replace(tzinfo=None)
        first, second = self._instants(wall)
        repeated = second - first  # > 0 when `after` falls in a repeated wall time
        start = wall
        if local.fold == 1:  # second occurrence: first occurrences resume after it
            start = self._wall(self._find_fold(after, after + math.ceil(repeated), 0)) - _SECOND
        best = self._first_in_view(start, after, fold=0)
        if self._every_hour:
            start = wall
            if local.fold == 0 and repeated > 0:  # the repeat of this hour is still ahead
                start = self._wall(self._find_fold(after, after + math.ceil(repeated), 1))
                start -= _SECOND
            best = min(best, self._first_in_view(start, after, fold=1))
        return best

    def count_fires(self, after: float, until: float) -> int:
        lo, hi = math.floor(after) + 1, math.floor(until)
        total = 0
        for start, end, offset in self._segments(lo, hi):
            if not self._every_hour and self._fold(start) == 1:
                start = self._find_fold(start - 1, end + 1, 0)  # skip repeated wall times
            if start <= end:
                total += self._count_walls(
                    _EPOCH + timedelta(seconds=start + offset),
                    _EPOCH + timedelta(seconds=end + offset),
                )
        return total

    def to_json(self) -> dict[str, Any]:
        return {"type": "cron", "expr": self.expr, "tz": self.tz}

    def describe(self) -> str:
        return f"cron {self.expr} ({self.tz})"

    # -- helpers --

    def _walls(self, after: datetime) -> Iterator[datetime]:
        """Matching naive wall times strictly after ``after``, ascending."""
        it = croniter(
            self._croniter_expr,
            after,
            ret_type=datetime,
            second_at_beginning=self._seconds_first,
        )
        while True:
            yield it.get_next(datetime)

    def _instants(self, wall: datetime) -> tuple[float, float]:
        """Epoch of ``wall``'s first and second occurrence (second < first in a gap)."""
        return (
            wall.replace(tzinfo=self._zone, fold=0).timestamp(),
            wall.replace(tzinfo=self._zone, fold=1).timestamp(),
        )

    def _first_in_view(self, start: datetime, after: float, fold: int) -> float:
        for wall in self._walls(start):
            first, second = self._instants(wall)
            if second < first:
                continue  # skipped by a spring-forward gap
            t = second if fold else first
            if t > after:
                return t
        raise AssertionError("unreachable: croniter iterates forever")  # pragma: no cover

    def _wall(self, t: int) -> datetime:
        return datetime.fromtimestamp(t, self._zone).replace(tzinfo=None)

    def _fold(self, t: int) -> int:
        return datetime.fromtimestamp(t, self._zone).fold

    def _offset(self, t: int) -> int:
        delta = datetime.fromtimestamp(t, self._zone).utcoffset()
        return 0 if delta is None else int(delta.total_seconds())

    def _find_fold(self, lo: int, hi: int, fold: int) -> int:
        """The first instant in ``(lo, hi]`` whose fold is ``fold``.

        The caller guarantees that the fold changes at most once in that window
        and that ``hi`` has (or stands for an instant with) the wanted fold.
        """
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self._fold(mid) == fold:
                hi = mid
            else:
                lo = mid
        return hi

    def _segments(self, lo: int, hi: int) -> Iterator[tuple[int, int, int]]:
        """Split instants ``[lo, hi]`` into runs of one UTC offset: (start, end, offset)."""
        step = 6 * 3600  # zones change offset months apart, never twice in six hours
        start = lo
        while start <= hi:
            offset = self._offset(start)
            probe = start
            while probe < hi and self._offset(min(probe + step, hi)) == offset:
                probe = min(probe + step, hi)
            if probe >= hi:
                yield start, hi, offset
                return
            low, high = probe, min(probe + step, hi)  # offset changes in (low, high]
            while high - low > 1:
                mid = (low + high) // 2
                if self._offset(mid) == offset:
                    low = mid
                else:
                    high = mid
            yield start, low, offset
            start = high

    def _count_walls(self, lo: datetime, hi: datetime) -> int:
        """How many matching wall times lie in ``[lo, hi]`` (whole seconds)."""
        days = croniter(self._day_expr, datetime.combine(lo.date(), datetime.min.time()) - _SECOND)
        total = 0
        while (day := days.get_next(datetime).date()) <= hi.date():
            first = (lo.hour, lo.minute, lo.second) if day == lo.date() else (0, 0, 0)
            last = (hi.hour, hi.minute, hi.second) if day == hi.date() else (23, 59, 59)
            total += self._rank(last, inclusive=True) - self._rank(first, inclusive=False)
        return total

    def _rank(self, hms: tuple[int, int, int], *, inclusive: bool) -> int:
        """How many matching times of day come before ``hms`` (or at it, if inclusive)."""
        hours, minutes, seconds = self._times
        hour, minute, second = hms
        rank = bisect_left(hours, hour) * len(minutes) * len(seconds)
        if hour in hours:
            rank += bisect_left(minutes, minute) * len(seconds)
            if minute in minutes:
                rank += (bisect_right if inclusive else bisect_left)(seconds, second)
        return rank


def cron(expr: str, tz: str = "UTC") -> Trigger:
    """Fire on a cron expression evaluated in the IANA zone ``tz``.

    ``"*/15 * * * *"`` is five fields (minute hour day-of-month month
    day-of-week). Six fields put **seconds first**: ``"*/5 * * * * *"`` fires
    every five seconds, ``"30 0 3 * * *"`` at 03:00:30. See
    :class:`CronTrigger` for daylight saving time.
    """
    return CronTrigger(expr, tz)


def _cron_fields(expr: str) -> list[str]:
    text = " ".join(expr.split())
    if text.startswith("@"):
        if text.lower() not in _ALIASES:
            raise InvalidSchedule(
                f"unknown cron alias {text!r}; use one of {', '.join(sorted(_ALIASES))}"
            )
        text = _ALIASES[text.lower()]
    fields = text.split()
    if len(fields) not in (5, 6):
        raise InvalidSchedule(
            f"cron expression {expr!r} has {len(fields)} fields; expected 5 "
            "(minute hour day-of-month month day-of-week) or 6 with seconds first"
        )
    return fields


def _expand(expr: str, fields: list[str], seconds_first: bool) -> list[list[Any]]:
    """croniter's expanded fields (minute, hour, dom, month, dow[, second]); checks each field."""
    names = ("second", *_FIELDS) if seconds_first else _FIELDS
    for index, (name, value) in enumerate(zip(names, fields, strict=True)):
        if _RANDOM_OR_HASHED.search(value):
            raise InvalidSchedule(
                f"cron field {name!r} has unsupported value {value!r} in {expr!r}: "
                "random (R) and hashed (H) values are not supported"
            )
        probe = ["*"] * len(fields)
        probe[index] = value
        try:
            croniter(" ".join(probe), second_at_beginning=seconds_first)
        except CroniterError:
            raise InvalidSchedule(
                f"cron field {name!r} has invalid value {value!r} in {expr!r}"
            ) from None
    try:
        expanded: list[list[Any]] = croniter(
            " ".join(fields), second_at_beginning=seconds_first
        ).expanded
    except CroniterError as exc:
        raise InvalidSchedule(f"invalid cron expression {expr!r}: {exc}") from None
    return expanded


def _values(expanded: list[Any], size: int) -> list[int]:
    return list(range(size)) if expanded == ["*"] else sorted({int(v) for v in expanded})


def _zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, TypeError):
        raise InvalidSchedule(
            f"unknown time zone {name!r}; use an IANA name such as 'UTC' or 'Europe/Berlin'"
        ) from None


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
    return FirePlan(tuple(fires), due - keep, trigger.next_fire(now))


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


def _check_finite(what: str, value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InvalidSchedule(f"{what} must be a finite number of epoch seconds, got {value!r}")


def _format_time(t: float) -> str:
    moment = datetime.fromtimestamp(t, UTC)
    if moment.microsecond:
        return moment.strftime("%Y-%m-%d %H:%M:%S.%f").rstrip("0") + " UTC"
    return moment.strftime("%Y-%m-%d %H:%M:%S" if moment.second else "%Y-%m-%d %H:%M") + " UTC"


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
