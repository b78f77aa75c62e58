"""Cron expressions: which instants match, across daylight saving time.

:class:`CronExpression` is the arithmetic behind :func:`rota.scheduling.cron`:
the first matching instant after a time, and how many match in a window
(counted per day, so catching up after a week of per-second fires stays
cheap). Pure functions of the times passed in, like the rest of
:mod:`rota.scheduling.triggers`.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_left, bisect_right
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from rota.errors import InvalidSchedule

__all__ = ["CronExpression"]

_EPOCH = datetime(1970, 1, 1)
_SECOND = timedelta(seconds=1)

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
# croniter (with dateutil, a tenth of rota's import time) is imported where an
# expression is parsed or walked: most processes never parse one.

# croniter's R (random) and H (hashed) values would differ between schedulers.
_RANDOM_OR_HASHED = re.compile(r"(?<![a-z])[hr](?![a-z])", re.IGNORECASE)


class CronExpression:
    """A parsed cron expression evaluated in one IANA time zone.

    Five fields are ``minute hour day-of-month month day-of-week``; six fields
    put seconds first: ``second minute hour day-of-month month day-of-week``
    (``"*/5 * * * * *"`` is every five seconds). Aliases such as ``@daily``
    are accepted. Day-of-month and day-of-week, when both are restricted,
    match either (classic cron). Random (``R``) and hashed (``H``) values are
    refused: they would differ between schedulers.

    Daylight saving time, decided on local wall times:

    * a wall time that does not exist (the spring-forward gap) is skipped;
    * a wall time that happens twice (fall back) fires once, at its first
      occurrence, unless the hour field is ``*``: an hourly or sub-hourly
      expression keeps firing through the repeated hour, as elapsed time
      goes on (the way cron daemons treat wildcard-hour jobs).

    Raises :class:`~rota.errors.InvalidSchedule` for a bad field, alias or
    zone, and for an expression no date matches.
    """

    def __init__(self, expr: str, tz: str = "UTC") -> None:
        from croniter import CroniterBadDateError

        fields = _cron_fields(expr)
        seconds_first = len(fields) == 6
        expanded = _expand(expr, fields, seconds_first)
        hours, minutes = _values(expanded[1], 24), _values(expanded[0], 60)
        seconds = _values(expanded[5], 60) if seconds_first else [0]
        self._zone = time_zone(tz)
        self._croniter_expr = " ".join(fields)
        self._seconds_first = seconds_first
        self._day_expr = "0 0 " + " ".join(fields[-3:])
        self._times = (hours, minutes, seconds)
        self._every_hour = len(hours) == 24
        try:
            next(self._walls(datetime(2000, 1, 1)))
        except CroniterBadDateError:
            raise InvalidSchedule(
                f"cron expression {expr!r} never fires: no date matches its day and month"
            ) from None

    # Fire times are the integer instants t whose local wall time matches the
    # expression, and that are the first occurrence of that wall time (fold 0)
    # unless the hour field is '*'. next_fire walks matching wall times with
    # croniter in two views: each wall's first occurrence, and (hour '*') its
    # second one. Each view maps walls to instants monotonically, so the first
    # instant after `after` in either view is found by walking forward.

    def next_fire(self, after: float) -> float:
        """The first fire time strictly after ``after``."""
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
        """How many fire times ``t`` satisfy ``after < t <= until``, counted per day."""
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

    # -- helpers --

    def _walls(self, after: datetime) -> Iterator[datetime]:
        """Matching naive wall times strictly after ``after``, ascending."""
        from croniter import croniter

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
        from croniter import croniter

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
    from croniter import CroniterError, croniter

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


def time_zone(name: str) -> ZoneInfo:
    """The IANA time zone ``name``; :class:`~rota.errors.InvalidSchedule` for
    one this machine does not know."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, TypeError):
        raise InvalidSchedule(
            f"unknown time zone {name!r}; use an IANA name such as 'UTC' or 'Europe/Berlin'"
        ) from None
