"""What became of a fetch, in a few kinds, read back from what its job keeps.

Pure functions: no I/O. A fetch job that succeeded keeps the answer's
``status`` in its result, or ``skipped`` when robots.txt disallows the
page; a failed attempt keeps its error as the worker stores it,
``"<exception class>: <message>"``, and the message of a
:class:`~rota.crawl.FetchFailed` starts with its kind. So the kinds are
read from the store as the jobs wrote them, with nothing counted on the side.

Answers (the fetch got a page back and its job succeeded): ``2xx``,
``3xx`` (redirects and 304 Not Modified), ``4xx``; ``robots-disallowed``
(not fetched: robots.txt says no). Failed attempts: ``5xx``,
``throttled`` (429 or 503: the host was paused), ``timeout``,
``connection`` (any other network error), ``parse`` (a parse callback
raised), ``lost`` (the worker died or its lease ran out), ``other``. A
fetch that waits for its origin's robots.txt snoozes
(:class:`~rota.crawl.TryLater`): that is no attempt, and leaves none.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx

__all__ = [
    "ANSWER_KINDS",
    "ERROR_KINDS",
    "answer_kind",
    "attempt_kinds",
    "error_kind",
    "network_kind",
    "status_kind",
]

#: What a fetch job that succeeded can say.
ANSWER_KINDS = ("2xx", "3xx", "4xx", "robots-disallowed")
#: What a failed attempt of a fetch job can say.
ERROR_KINDS = (
    "5xx",
    "throttled",
    "timeout",
    "connection",
    "parse",
    "lost",
    "other",
)

#: Failed attempts whose kind is their exception's class.
_BY_CLASS = {"Throttled": "throttled", "ParseFailed": "parse"}
_FETCH_FAILED = ("5xx", "throttled", "timeout", "connection")


def network_kind(exc: httpx.HTTPError) -> str:
    """The kind of a request that got no answer: ``timeout`` or ``connection``."""
    return "timeout" if isinstance(exc, httpx.TimeoutException) else "connection"


def status_kind(status: int) -> str:
    """The kind of an HTTP answer by its status: ``2xx``, ``3xx``, ``4xx``,
    ``throttled`` (429, 503) or ``5xx``."""
    if status in (429, 503):
        return "throttled"
    if status >= 500:
        return "5xx"
    if status >= 400:
        return "4xx"
    return "3xx" if status >= 300 else "2xx"


def answer_kind(result: object) -> str | None:
    """The kind of a succeeded fetch job's ``result``, or None when it is not
    a fetch job's result."""
    if not isinstance(result, Mapping):
        return None
    if result.get("skipped") is not None:
        return "robots-disallowed"
    status = result.get("status")
    if isinstance(status, int) and not isinstance(status, bool) and 100 <= status <= 499:
        return status_kind(status)
    return None


def error_kind(error: str | None) -> str:
    """The kind of a failed attempt from the error its job keeps."""
    name, _, message = (error or "").partition(": ")
    if name == "FetchFailed":
        kind = message.partition(": ")[0]
        return kind if kind in _FETCH_FAILED else "other"
    return _BY_CLASS.get(name, "other")


def attempt_kinds(history: tuple[Mapping[str, Any], ...]) -> list[str]:
    """The kind of each attempt of a job that did not succeed, from its
    history: ``failed`` entries by their error, ``lost`` ones as ``lost``."""
    kinds = []
    for entry in history:
        event = entry.get("event")
        if event == "failed":
            error = entry.get("error")
            kinds.append(error_kind(error if isinstance(error, str) else None))
        elif event == "lost":
            kinds.append("lost")
    return kinds
