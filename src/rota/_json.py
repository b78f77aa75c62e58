"""JSON encoding of arguments and results: orjson, JSON only, exact, with a size cap.

What may be encoded is decided by :mod:`rota._validate` (the same rules for
the library, the CLI and the web API); this module only encodes and decodes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from rota._validate import check_call, check_json, check_text
from rota.errors import PayloadTooLarge, SerializationError

__all__ = [
    "DEFAULT_PAYLOAD_CAP",
    "InvalidJSON",
    "canonical",
    "dumps",
    "dumps_call",
    "dumps_record",
    "loads",
    "parse",
]

DEFAULT_PAYLOAD_CAP = 1024 * 1024


class InvalidJSON(SerializationError):
    """Text given as JSON does not parse (its syntax is wrong)."""


def dumps(value: Any, *, what: str = "value", root: str = "value", cap: int | None = None) -> bytes:
    """Encode ``value`` as JSON bytes. Raises :class:`SerializationError` naming the
    path (from ``root``) of a value that would not round-trip exactly, or
    :class:`PayloadTooLarge` when ``cap`` is given and exceeded."""
    check_json(value, what=what, root=root)
    return _encode(value, what, cap, ((root, value),))


def dumps_call(args: tuple[Any, ...], kwargs: Mapping[str, Any], *, cap: int | None) -> bytes:
    """Encode a call as ``{"args": [...], "kwargs": {...}}`` (tuples become lists),
    checked as :func:`rota._validate.check_call` says."""
    check_call(args, kwargs, "task arguments")
    call = {"args": args, "kwargs": kwargs}
    return _encode(call, "task arguments", cap, (("args", args), ("kwargs", kwargs)))


def canonical(value: Any) -> bytes:
    """JSON of a value already checked (by :func:`dumps_call` or
    :func:`rota._validate.check_json`) with object keys sorted at every level,
    so that equal values give equal bytes (tuples and lists alike)."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def dumps_record(value: Mapping[str, str | float | None], *, what: str) -> bytes:
    """Encode a flat record rota builds itself from stored values (strings,
    finite numbers, None), such as a job's history entry: nothing in it needs
    :func:`dumps`'s walk of user values, only the encoding."""
    return _encode(value, what, None, (("entry", value),))


def _encode(value: Any, what: str, cap: int | None, roots: Sequence[tuple[str, Any]]) -> bytes:
    """``value`` as JSON bytes; ``roots`` name its parts (the root of each
    path) for a message about a value that cannot be encoded."""
    try:
        data = orjson.dumps(value)
    except TypeError as exc:  # a str with a lone surrogate, which UTF-8 cannot hold
        for root, part in roots:
            check_text(part, what=what, root=root)  # raises, naming where it is
        raise SerializationError(f"{what} must be JSON-serializable: {exc}") from None
    if cap is not None and len(data) > cap:
        raise PayloadTooLarge(len(data), cap)
    return data


def loads(data: bytes | str | None) -> Any:
    """Decode JSON bytes produced by :func:`dumps` (``None`` stays ``None``)."""
    if data is None:
        return None
    return orjson.loads(data)


def _no_constant(token: str) -> Any:
    raise SerializationError(f"{token} is not JSON (JSON has no NaN or infinity)")


def parse(text: str, *, what: str = "") -> Any:
    """Decode JSON typed by a person (the CLI's arguments); ``what`` prefixes messages.

    Raises :class:`InvalidJSON` when the text is not JSON at all, and
    :class:`SerializationError` for JSON that rota refuses on sight: ``NaN``,
    ``Infinity``, or nesting too deep to read. The caller checks the value
    with :mod:`rota._validate` (integer range, depth) before using it.
    """
    prefix = f"{what}: " if what else ""
    try:
        return json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        raise SerializationError(f"{prefix}nested too deeply to be read") from None
    except SerializationError as exc:
        raise SerializationError(f"{prefix}{exc}") from None
    except ValueError as exc:
        raise InvalidJSON(f"{prefix}not valid JSON: {exc}") from None
