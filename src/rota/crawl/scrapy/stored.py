"""A Scrapy request as a rota job's argument, and back: pure, no store.

A request is kept as one JSON object: Scrapy's own ``Request.to_dict``
(url, method, callback and errback by name, headers, body, cookies, meta,
cb_kwargs, priority, flags, encoding, dont_filter, the request class) with
its bytes made text: the body in base64, header names and values as Latin-1
strings. ``meta``, ``cb_kwargs`` and cookies must be JSON that round-trips
exactly; anything else is refused by :func:`encode` with
:class:`UnstorableRequest`, naming the request's URL and the path of the
value. Keys of ``meta`` that start with :data:`PRIVATE` (the claim this
process holds) are never stored.
"""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any

from rota import _validate
from rota.crawl.errors import CrawlError
from rota.errors import SerializationError

if TYPE_CHECKING:
    from scrapy import Request, Spider

__all__ = ["PRIVATE", "UnstorableRequest", "decode", "encode"]

#: meta keys with this prefix belong to this process and are not stored.
PRIVATE = "_rota"


class UnstorableRequest(CrawlError, SerializationError):
    """A Scrapy request that cannot be kept in the store: a value of its
    ``meta``, ``cb_kwargs`` or cookies is not JSON, or its callback is not
    a method of the spider. Nothing was sent."""


def encode(request: Request, spider: Spider | None) -> dict[str, Any]:
    """``request`` as a JSON object (see the module docstring); callbacks
    and errbacks by the name of the ``spider``'s method.
    :class:`UnstorableRequest` for what cannot be kept."""
    try:
        data = request.to_dict(spider=spider)
    except ValueError as exc:  # a callback that is not a method of the spider
        raise UnstorableRequest(f"request {request.url}: {exc}") from None
    data["meta"] = {k: v for k, v in data["meta"].items() if not str(k).startswith(PRIVATE)}
    data["headers"] = {
        _text(name): [_text(value) for value in values] for name, values in data["headers"].items()
    }
    body = data.pop("body")
    data["body"] = base64.b64encode(body).decode("ascii") if body else ""
    for key, value in data.items():
        try:
            _validate.check_json(value, what="request field", root=key)
        except SerializationError as exc:
            raise UnstorableRequest(f"request {request.url}: {exc}") from None
    return data


def decode(data: dict[str, Any], spider: Spider | None) -> Request:
    """The request :func:`encode` gave ``data`` for; callbacks and errbacks
    looked up on ``spider`` by name (``ValueError`` if it has none so called)."""
    from scrapy.utils.request import request_from_dict

    fields = dict(data)
    fields["body"] = base64.b64decode(fields.get("body") or "")
    fields["headers"] = {
        name.encode("latin-1"): [value.encode("latin-1") for value in values]
        for name, values in fields.get("headers", {}).items()
    }
    return request_from_dict(fields, spider=spider)


def _text(value: bytes | str) -> str:
    return value.decode("latin-1") if isinstance(value, bytes) else value
