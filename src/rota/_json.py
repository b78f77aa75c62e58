"""JSON encoding of arguments and results: orjson, JSON only, with a size cap."""

from __future__ import annotations

from typing import Any

import orjson

from rota.errors import PayloadTooLarge, SerializationError

DEFAULT_PAYLOAD_CAP = 1024 * 1024


def dumps(value: Any, *, what: str = "value", cap: int | None = None) -> bytes:
    """Encode ``value`` as JSON bytes; raise :class:`SerializationError` or
    :class:`PayloadTooLarge` (when ``cap`` is given) with a precise message."""
    try:
        data = orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)
    except TypeError as exc:
        raise SerializationError(f"{what} must be JSON-serializable: {exc}") from None
    if cap is not None and len(data) > cap:
        raise PayloadTooLarge(len(data), cap)
    return data


def loads(data: bytes | str | None) -> Any:
    """Decode JSON bytes produced by :func:`dumps` (``None`` stays ``None``)."""
    if data is None:
        return None
    return orjson.loads(data)
