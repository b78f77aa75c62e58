"""Reading a stored job's JSON fields back, above all its payload
``{"args": [...], "kwargs": {...}}``.

The worker calls :func:`decode`, which refuses a payload rota did not write
with :class:`~rota.errors.CorruptJob`. Inspection calls the ``read``
functions, which never raise: what cannot be read comes back empty, with a
note saying why.
"""

from __future__ import annotations

from typing import Any

import orjson

from rota.errors import CorruptJob

_KEYS = frozenset(("args", "kwargs"))
_EXCERPT = 80  # bytes of a bad payload quoted in the error


def decode(job_id: str, data: bytes | str | None) -> tuple[list[Any], dict[str, Any]]:
    """The positional and keyword arguments of a stored payload.

    Either key may be absent (no arguments of that kind). Raises
    :class:`CorruptJob` for bytes that are not UTF-8 JSON, or JSON that is
    not an object with only a list ``args`` and an object ``kwargs``.
    """
    if data is None:
        raise CorruptJob(job_id, "the job has no payload")
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise CorruptJob(job_id, f"not UTF-8 JSON ({exc}): {_excerpt(data)}") from None
    if not isinstance(value, dict):
        raise CorruptJob(job_id, f"expected a JSON object, got {_kind(value)}: {_excerpt(data)}")
    if not _KEYS.issuperset(value):
        unknown = sorted(set(value) - _KEYS)
        raise CorruptJob(job_id, f"unexpected keys {unknown}; only 'args' and 'kwargs' are allowed")
    args = value.get("args", [])
    kwargs = value.get("kwargs", {})
    if not isinstance(args, list):
        raise CorruptJob(job_id, f"'args' must be a JSON list, got {_kind(args)}")
    if not isinstance(kwargs, dict):
        raise CorruptJob(job_id, f"'kwargs' must be a JSON object, got {_kind(kwargs)}")
    return args, kwargs


def read(job_id: str, data: bytes | str | None) -> tuple[list[Any], dict[str, Any], str | None]:
    """Like :func:`decode`, but for display: a corrupt payload reads as no
    arguments plus the ``CorruptJob: ...`` text saying why (else None)."""
    try:
        args, kwargs = decode(job_id, data)
    except CorruptJob as exc:
        return [], {}, f"CorruptJob: {exc}"
    return args, kwargs, None


def read_json(data: bytes | str | None, what: str) -> tuple[Any, str | None]:
    """Any stored JSON value for display (a result, a history): the value, or
    None and a note saying it could not be read."""
    if data is None:
        return None, None
    try:
        return orjson.loads(data), None
    except orjson.JSONDecodeError as exc:
        return None, f"the stored {what} is not UTF-8 JSON ({exc}): {_excerpt(data)}"


def read_history(data: bytes | str | None) -> tuple[tuple[dict[str, Any], ...], str | None]:
    """A job's history of attempts for display, or ``()`` and a note."""
    value, note = read_json(data, "history")
    if value is None or note:
        return (), note
    if not isinstance(value, list) or not all(isinstance(entry, dict) for entry in value):
        return (), f"the stored history is not a list of objects: {_excerpt(data or b'')}"
    return tuple(value), None


def read_limit_keys(data: bytes | str | None) -> tuple[str, ...]:
    """The flow-control keys of a job's ``limits`` field, in order, without
    repeats; ``()`` when it has none or they cannot be read."""
    value, _ = read_json(data or None, "limits")
    if not isinstance(value, dict):
        return ()
    keys: list[str] = []
    for group in ("c", "r", "b"):
        entries = value.get(group, ())
        if isinstance(entries, list):
            keys += [e[0] for e in entries if isinstance(e, list) and e and isinstance(e[0], str)]
    return tuple(dict.fromkeys(keys))


def _kind(value: object) -> str:
    return "null" if value is None else type(value).__name__


def _excerpt(data: bytes | str) -> str:
    head = data[:_EXCERPT]
    return repr(head) + ("..." if len(data) > _EXCERPT else "")


__all__ = ["decode", "read", "read_history", "read_json", "read_limit_keys"]
