"""Durations and datetimes as rota reads them from users."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from rota.errors import InvalidArgument

_UNITS = {"ms": 0.001, "s": 1, "m": 60, "min": 60, "h": 3600, "d": 86400, "w": 604800}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|min|m|h|d|w)?\s*$")


def parse_duration(value: float | int | str | timedelta, *, what: str = "duration") -> float:
    """Seconds from ``30``, ``1.5``, ``"90s"``, ``"15m"``, ``"2h"``, ``"7d"`` or a timedelta."""
    if isinstance(value, timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, bool):
        raise InvalidArgument(f"{what} must be a number of seconds or a string like '7d'")
    elif isinstance(value, int | float):
        seconds = float(value)
    elif isinstance(value, str):
        match = _DURATION.match(value)
        if not match:
            raise InvalidArgument(
                f"{what} {value!r} is not a duration; use seconds or e.g. '90s', '15m', '2h', '7d'"
            )
        seconds = float(match.group(1)) * _UNITS[match.group(2) or "s"]
    else:
        raise InvalidArgument(f"{what} must be a number of seconds or a string like '7d'")
    if seconds < 0:
        raise InvalidArgument(f"{what} must not be negative, got {value!r}")
    return seconds


def to_epoch(when: datetime) -> float:
    """Seconds since the epoch; a naive datetime is taken as UTC."""
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.timestamp()


def from_epoch(seconds: float) -> datetime:
    """An aware UTC datetime."""
    return datetime.fromtimestamp(seconds, tz=UTC)
