"""The input rules: every number, name and argument that reaches a store passes here.

The library, the CLI and the web API all call these functions, so a value is
refused the same way whichever door it comes through, before anything is
written. Bounds are chosen so that every store holds them exactly: Redis keeps
numbers as doubles (exact integers up to 2**53), SQL columns as 64-bit
integers.

JSON values (task arguments and results) must round-trip exactly: only None,
bool, int, float, str, list, tuple and dict, with string keys, finite floats,
integers within 64 signed bits and at most :data:`MAX_DEPTH` levels of
nesting. Tuples are accepted and come back as lists. Subclasses (enum members,
``IntEnum``, ``str`` subclasses) and foreign types (datetime, UUID, Decimal,
dataclasses, bytes, sets) are refused rather than converted.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import decimal
import enum
import uuid
from collections.abc import Mapping
from typing import Any

from rota.errors import InvalidArgument, SerializationError

__all__ = [
    "MAX_DEPTH",
    "MAX_DURATION",
    "MAX_INT",
    "MAX_LIMIT",
    "MAX_LOST",
    "MAX_NAME_LENGTH",
    "MAX_PRIORITY",
    "MAX_RATE",
    "MAX_RETRIES",
    "MAX_TIME",
    "MIN_INT",
    "MIN_PRIORITY",
    "MIN_RATE",
    "MIN_TIME",
    "check_call",
    "check_json",
    "check_text",
    "exception_classes",
    "integer",
    "limit_override",
    "name",
    "seconds",
    "time_range_error",
    "too_long",
]

#: Longest queue, task, schedule or limit-key name.
MAX_NAME_LENGTH = 200
#: Priorities fit 32 signed bits (symmetric around 0).
MIN_PRIORITY, MAX_PRIORITY = -(2**31 - 1), 2**31 - 1
#: Most retries of a task, and most lost attempts a job may have.
MAX_RETRIES = 10_000
MAX_LOST = 10_000
#: Largest concurrency limit, rate burst and breaker failure count.
MAX_LIMIT = 1_000_000
#: Longest duration (timeouts, leases, delays, cooldowns): 100 years, in seconds.
MAX_DURATION = 100 * 365.25 * 86400
#: Rates in jobs per second: at least one per 100 years, at most a million a second.
MIN_RATE, MAX_RATE = 1 / MAX_DURATION, 1_000_000.0
#: The earliest and latest times rota keeps (a job's run-at, a schedule's
#: fire and next fire times, a trigger's times), in seconds since the epoch: a
#: day inside the years 1 to 9999 that ``datetime`` holds, so that every such
#: time can be shown in every time zone (offsets stay under a day).
MIN_TIME = -62_135_510_400.0  # 0001-01-02 00:00:00 UTC
MAX_TIME = 253_402_214_400.0  # 9999-12-31 00:00:00 UTC
#: The two bounds as users read them.
MIN_TIME_SHOWN, MAX_TIME_SHOWN = "0001-01-02 00:00 UTC", "9999-12-31 00:00 UTC"
#: Integers inside JSON values: 64 signed bits.
MIN_INT, MAX_INT = -(2**63), 2**63 - 1
#: Deepest nesting of lists and dicts inside one JSON value.
MAX_DEPTH = 64


# -- numbers and names -------------------------------------------------------------


def integer(value: object, what: str, low: int, high: int) -> int:
    """``value`` if it is an int (not a bool) from ``low`` to ``high``, else
    :class:`InvalidArgument`."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgument(f"{what} must be an integer, not {_short(value)}")
    if value > high:
        raise InvalidArgument(f"{what} must be at most {high}, not {_short(value)}")
    if value >= low:
        return int(value)
    if low == 0:
        raise InvalidArgument(f"{what} must be a non-negative integer, not {value}")
    if low == 1:
        raise InvalidArgument(f"{what} must be at least 1 (a positive integer), not {value}")
    raise InvalidArgument(f"{what} must be at least {low}, not {_short(value)}")


def seconds(value: float, what: str, *, positive: bool = False, shown: object = None) -> float:
    """``value`` if it is a finite number of seconds, at least 0 (above 0 when
    ``positive``) and at most :data:`MAX_DURATION`; ``shown`` is what the user
    gave, for the message."""
    if value - value == 0.0 and (value > 0 if positive else value >= 0) and value <= MAX_DURATION:
        return value
    given = _short(value if shown is None else shown)
    if value - value != 0.0:  # NaN or an infinity
        raise InvalidArgument(f"{what} must be finite, not {given}")
    if value < 0:
        raise InvalidArgument(f"{what} must not be negative, got {given}")
    if value == 0:
        raise InvalidArgument(f"{what} must be above 0, got {given}")
    raise InvalidArgument(too_long(what, given))


def too_long(what: str, given: str) -> str:
    """The message for a duration ``given`` over :data:`MAX_DURATION`."""
    return f"{what} {given} is too long: at most 100 years ({MAX_DURATION:.0f} s)"


def time_range_error(epoch: float, shown: str) -> str | None:
    """Why ``epoch`` (a finite time, ``shown`` as the user gave it) is not
    one rota keeps, or None when it is within :data:`MIN_TIME` to
    :data:`MAX_TIME`."""
    if epoch < MIN_TIME:
        return f"{shown} is before {MIN_TIME_SHOWN}, the earliest time rota keeps"
    if epoch > MAX_TIME:
        return f"{shown} is past {MAX_TIME_SHOWN}, the latest time rota keeps"
    return None


def name(value: object, what: str) -> str:
    """``value`` if it is a usable name: a non-empty str of at most
    :data:`MAX_NAME_LENGTH` printable characters, without surrounding spaces.
    ``what`` says what it names ("queue", "schedule name", "limit key")."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidArgument(f"{what} must be a non-empty string, not {_short(value)}")
    if len(value) > MAX_NAME_LENGTH:
        raise InvalidArgument(
            f"{what} {value[:40]!r}... is {len(value)} characters; "
            f"at most {MAX_NAME_LENGTH} are allowed"
        )
    if not value.isprintable() or value != value.strip():
        raise InvalidArgument(
            f"{what} {value!r} must not have control characters or surrounding spaces"
        )
    return value


def exception_classes(value: object, what: str) -> tuple[type[BaseException], ...]:
    """An exception class, or a tuple or list of them, as a tuple; ``what``
    names the option for the message."""
    items = tuple(value) if isinstance(value, list | tuple) else (value,)
    for item in items:
        if not (isinstance(item, type) and issubclass(item, BaseException)):
            raise InvalidArgument(
                f"{what} takes exception classes (e.g. (ConnectionError, TimeoutError)), "
                f"not {_short(item)}"
            )
    return items


def limit_override(value: object) -> int | None:
    """A run-time concurrency limit: None (back to the declared one) or 0 to
    :data:`MAX_LIMIT` (0 holds every job of the key)."""
    if value is None:
        return None
    return integer(value, "limit", 0, MAX_LIMIT)


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


# -- JSON values -------------------------------------------------------------------


class _Refused(Exception):
    """A value that is not exact JSON; ``path`` grows, innermost first, as it unwinds."""

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem
        self.path: list[str] = []


def check_json(value: Any, *, what: str = "value", root: str = "value") -> None:
    """Raise :class:`SerializationError` unless ``value`` is JSON that round-trips
    exactly (see the module docstring); the message names the path of the bad
    value from ``root``, e.g. ``result[2]['when']``."""
    try:
        _walk(value, 0)
    except _Refused as refused:
        raise _error(what, root, refused) from None


def check_call(args: tuple[Any, ...], kwargs: Mapping[str, Any], what: str) -> None:
    """:func:`check_json` for a call's positional and keyword arguments, named
    ``args[i]`` and ``kwargs['k']`` in messages."""
    for item in args:  # fast path: flat arguments of plain scalars, no calls
        kind = type(item)
        if not (
            kind is str
            or kind is bool
            or item is None
            or (kind is int and MIN_INT <= item <= MAX_INT)
            or (kind is float and item - item == 0.0)
        ):
            break
    else:
        if not kwargs:
            return
    root = "args"
    try:
        if args:
            _walk(args, -1)
        if kwargs:
            root = "kwargs"
            _walk(kwargs, -1)
    except _Refused as refused:
        raise _error(what, root, refused) from None


def check_text(value: Any, *, what: str = "value", root: str = "value") -> None:
    """Raise :class:`SerializationError` naming the path (from ``root``) of the
    first string in ``value``, or dict key, that UTF-8 cannot encode: one with
    a lone surrogate (``"\\ud800"``), which JSON text cannot carry.

    Walks every string, so it runs only once encoding has failed, on a value
    :func:`check_json` passed (nesting bounded)."""
    try:
        _walk_text(value)
    except _Refused as refused:
        raise _error(what, root, refused) from None


def _walk_text(value: Any) -> None:
    kind = type(value)
    if kind is str:
        if not _utf8(value):
            raise _Refused(f"is a str with a lone surrogate ({_surrogate(value)}), {_NOT_UTF8}")
    elif kind is list or kind is tuple:
        for index, item in enumerate(value):
            try:
                _walk_text(item)
            except _Refused as refused:
                refused.path.append(f"[{index}]")
                raise
    elif kind is dict:
        for key, item in value.items():
            if type(key) is str and not _utf8(key):
                raise _Refused(f"has the key {_short(key)}, with a lone surrogate, {_NOT_UTF8}")
            try:
                _walk_text(item)
            except _Refused as refused:
                refused.path.append(f"[{key!r}]")
                raise


_NOT_UTF8 = "which UTF-8, the encoding of JSON text, cannot hold"


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _surrogate(text: str) -> str:
    index = next(i for i, char in enumerate(text) if "\ud800" <= char <= "\udfff")
    return f"{text[index]!r} at index {index}"


def _error(what: str, root: str, refused: _Refused) -> SerializationError:
    path = root + "".join(reversed(refused.path))
    if len(path) > 120:
        path = path[:60] + "..." + path[-40:]
    return SerializationError(f"{what} must be JSON-serializable: {path} {refused.problem}")


def _walk(value: Any, depth: int) -> None:
    kind = type(value)
    if kind is str or kind is bool or value is None:
        return
    if kind is int:
        if MIN_INT <= value <= MAX_INT:
            return
        raise _Refused("is an integer beyond 64 signed bits, not portable JSON (send a string)")
    if kind is float:
        if value - value == 0.0:  # false for NaN and both infinities
            return
        raise _Refused(f"is {value!r}, not JSON (JSON has no NaN or infinity; send None)")
    if kind is list or kind is tuple or kind is dict:
        if depth >= MAX_DEPTH:
            raise _Refused(f"nests lists and dicts deeper than {MAX_DEPTH} levels")
        if kind is dict:
            _walk_dict(value, depth)
        else:
            _walk_list(value, depth)
        return
    raise _Refused(_foreign(value))


def _walk_list(value: list[Any] | tuple[Any, ...], depth: int) -> None:
    index = 0
    try:
        for item in value:
            if type(item) is not str:  # the common case, inline
                _walk(item, depth + 1)
            index += 1
    except _Refused as refused:
        refused.path.append(f"[{index}]")
        raise


def _walk_dict(value: dict[Any, Any], depth: int) -> None:
    key: Any = None
    try:
        for key, item in value.items():
            if type(key) is not str:
                break
            if type(item) is not str:  # the common case, inline
                _walk(item, depth + 1)
        else:
            return
    except _Refused as refused:
        refused.path.append(f"[{key!r}]")
        raise
    raise _Refused(
        f"has the key {_short(key)} ({type(key).__name__}); JSON object keys are strings"
    )


_HINTS: tuple[tuple[type | tuple[type, ...], str], ...] = (
    ((dt.datetime, dt.date, dt.time), "send value.isoformat()"),
    (dt.timedelta, "send value.total_seconds()"),
    (uuid.UUID, "send str(value)"),
    (decimal.Decimal, "send str(value) or float(value)"),
    ((bytes, bytearray, memoryview), "send text, e.g. value.decode() or base64"),
    ((set, frozenset), "send a list"),
)


def _foreign(value: Any) -> str:
    """Why ``value`` (not a plain JSON type) is refused, with what to send instead."""
    kind = type(value)
    if isinstance(value, enum.Enum):
        return f"is the enum member {kind.__name__}.{value.name}, not JSON (send its .value)"
    for types, hint in _HINTS:
        if isinstance(value, types):
            return f"is {_a(kind.__name__)}, not JSON ({hint})"
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return f"is the dataclass {kind.__name__}, not JSON (send dataclasses.asdict(value))"
    for base in (bool, int, float, str, list, tuple, dict):
        if isinstance(value, base):
            return (
                f"is {_a(kind.__name__)} (a subclass of {base.__name__}), not plain JSON "
                f"(send {base.__name__}(value))"
            )
    return f"is {_a(kind.__name__)}, not JSON"


def _a(noun: str) -> str:
    return ("an " if noun[:1] in "aeiouAEIO" else "a ") + noun


def type_name(value: object) -> str:
    """``value``'s class as a message names it: ``a module.Class``."""
    kind = type(value)
    return _a(f"{kind.__module__}.{kind.__qualname__}")
