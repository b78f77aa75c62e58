"""Durations and datetimes as rota reads them from users."""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime, timedelta

from rota import _validate
from rota.errors import InvalidArgument

_UNITS = {"ms": 0.001, "s": 1, "m": 60, "min": 60, "h": 3600, "d": 86400, "w": 604800}
_DURATION = re.compile(r"^\s*(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)\s*(ms|s|min|m|h|d|w)?\s*$")


def parse_duration(
    value: float | int | str | timedelta, *, what: str = "duration", positive: bool = False
) -> float:
    """Seconds from ``30``, ``1.5``, ``"90s"``, ``"15m"``, ``"2h"``, ``"7d"``,
    ``"1e3"`` or a timedelta.

    The result is finite, at least 0 (above 0 when ``positive``) and at most
    100 years; anything else raises :class:`InvalidArgument`.
    """
    if isinstance(value, timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, bool) or not isinstance(value, int | float | str):
        raise InvalidArgument(f"{what} must be a number of seconds or a string like '7d'")
    elif isinstance(value, int):
        # float() of a huge int would overflow: out of range, it is checked as it is
        seconds = float(value) if abs(value) <= _validate.MAX_DURATION else value
    elif isinstance(value, float):
        seconds = value
    else:
        match = _DURATION.match(value)
        if not match:
            raise InvalidArgument(
                f"{what} {value!r} is not a duration; use seconds or e.g. '90s', '15m', '2h', '7d'"
            )
        # a negative one is read, to be refused as negative rather than as
        # no duration at all ("-0" reads as 0)
        seconds = float(match.group(1)) * _UNITS[match.group(2) or "s"] + 0.0
        if seconds == math.inf:  # more digits than a float holds: "1e400"
            raise InvalidArgument(_validate.too_long(what, repr(value)))
    return _validate.seconds(seconds, what, positive=positive, shown=value)


def to_epoch(when: datetime) -> float:
    """Seconds since the epoch; a naive datetime is taken as UTC."""
    if not isinstance(when, datetime):
        raise InvalidArgument(f"expected a datetime, not {type(when).__name__}")
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.timestamp()


def from_epoch(seconds: float) -> datetime:
    """An aware UTC datetime."""
    return datetime.fromtimestamp(seconds, tz=UTC)


def shown_utc(seconds: float) -> datetime | None:
    """An aware UTC datetime, or None for a time no datetime holds (a stored
    value written by an older rota or by hand), for displays that must not fail."""
    try:
        return datetime.fromtimestamp(seconds, tz=UTC)
    except (ValueError, OverflowError, OSError):
        return None


def format_duration(seconds: float) -> str:
    """``42s``, ``3m 05s``, ``2h 10m``, ``4d 03h`` (negative durations read as ``0s``)."""
    total = max(0, int(seconds))
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d {hours:02d}h"
    if hours:
        return f"{hours}h {minutes:02d}m"
    if minutes:
        return f"{minutes}m {secs:02d}s"
    return f"{secs}s"
