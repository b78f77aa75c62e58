"""The JSON shape of the values the dashboard's forms and their API hand to
``app.admin``: ``args`` an array, ``kwargs`` and ``options`` objects, a
schedule's ``trigger`` an object and ``enabled`` true, false or null.

``app.admin`` refuses a value of the wrong type in the words of its Python
callers (a list or a tuple, a dict, True, False or None); the web checks the
shape first so that people who typed JSON are answered in JSON's words (an
array, an object, true, false or null). Every other rule about the values
stays with ``app.admin``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from rota.errors import InvalidArgument, InvalidSchedule, RotaError

__all__ = ["check", "kind"]

#: Field: (the JSON types it takes, those types in words, the error it raises).
_SHAPES: dict[str, tuple[tuple[type, ...], str, type[RotaError]]] = {
    "args": ((list,), "a JSON array", InvalidArgument),
    "kwargs": ((dict, type(None)), "a JSON object", InvalidArgument),
    "options": ((dict, type(None)), "a JSON object", InvalidArgument),
    "trigger": (
        (dict,),
        'a JSON object such as {"type": "every", "interval": 60}',
        InvalidSchedule,
    ),
    "enabled": ((bool, type(None)), "true, false or null", InvalidSchedule),
}
_SHOWN = 40  # characters of a string or number quoted in a message


def kind(value: Any) -> str:
    """A JSON value in words: ``an object``, ``an array``, ``the string "yes"``,
    ``the number 1``, ``true``, ``false`` or ``null``."""
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    text = json.dumps(value, ensure_ascii=False)  # (a body's NaN shows as NaN)
    if len(text) > _SHOWN:
        text = text[: _SHOWN - 1] + "…"
    if isinstance(value, str):
        return f"the string {text}"
    if isinstance(value, int | float) and not isinstance(value, bool):
        return f"the number {text}"
    return text


def check(fields: Mapping[str, Any], where: str = "") -> None:
    """Refuse the first of ``fields`` (by name) whose value is not of its JSON
    shape; ``where`` starts the message (``schedule 'nightly'``). Fields
    without a shape here are left to ``app.admin``."""
    for name, value in fields.items():
        if name not in _SHAPES:
            continue
        types, words, error = _SHAPES[name]
        if not isinstance(value, types):
            prefix = f"{where}: " if where else ""
            raise error(f"{prefix}{name} must be {words}, not {kind(value)}")
