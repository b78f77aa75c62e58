"""The kinds of a fetch's outcome, read back from its job's result and errors
(rota.crawl.outcomes), and the errors the crawler raises carrying them."""

from __future__ import annotations

import httpx
import pytest

from rota.crawl import FetchFailed, ParseFailed, Throttled, TryLater
from rota.crawl.outcomes import (
    ANSWER_KINDS,
    ERROR_KINDS,
    answer_kind,
    attempt_kinds,
    error_kind,
    network_kind,
    status_kind,
)


def stored(exc: BaseException) -> str:
    """The error a job keeps for an attempt that raised ``exc`` (the worker's format)."""
    return f"{type(exc).__name__}: {exc}"


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (200, "2xx"),
        (204, "2xx"),
        (301, "3xx"),
        (304, "3xx"),
        (404, "4xx"),
        (410, "4xx"),
        (429, "throttled"),
        (503, "throttled"),
        (500, "5xx"),
        (502, "5xx"),
    ],
)
def test_status_kinds(status: int, kind: str) -> None:
    assert status_kind(status) == kind


def test_answer_kinds_from_a_fetch_jobs_result() -> None:
    assert answer_kind({"url": "http://a/", "depth": 0, "status": 200, "changed": True}) == "2xx"
    assert answer_kind({"status": 304, "changed": False}) == "3xx"
    assert answer_kind({"status": 404}) == "4xx"
    assert answer_kind({"url": "http://a/x", "skipped": "disallowed by robots.txt"}) == (
        "robots-disallowed"
    )
    for other in (None, [], {"status": "200"}, {"status": True}, {"status": 500}, {"items": []}):
        assert answer_kind(other) is None, other
    assert {"2xx", "3xx", "4xx", "robots-disallowed"} == set(ANSWER_KINDS)


def test_error_kinds_from_the_errors_the_crawler_raises() -> None:
    assert error_kind(stored(FetchFailed("5xx", "http://a/ answered 500"))) == "5xx"
    assert error_kind(stored(FetchFailed("timeout", "http://a/: ReadTimeout: x"))) == "timeout"
    assert error_kind(stored(FetchFailed("connection", "http://a/: ConnectError"))) == "connection"
    assert error_kind(stored(Throttled("http://a/ answered 429: a is paused"))) == "throttled"
    # a wait for robots.txt is a snooze, no attempt: only older versions stored it
    assert error_kind(stored(TryLater("robots.txt of http://a is not read yet", 5.0))) == "other"
    assert error_kind(stored(ParseFailed("parse callback f failed"))) == "parse"
    for other in (None, "", "ValueError: boom", "FetchFailed: odd: x", "internal error in x"):
        assert error_kind(other) == "other", other
    assert FetchFailed("timeout", "x").kind == "timeout"
    assert str(FetchFailed("5xx", "http://a/ answered 502")) == "5xx: http://a/ answered 502"


def test_network_errors_are_timeouts_or_connection_errors() -> None:
    request = httpx.Request("GET", "http://a/")
    assert network_kind(httpx.ReadTimeout("slow", request=request)) == "timeout"
    assert network_kind(httpx.ConnectTimeout("slow", request=request)) == "timeout"
    assert network_kind(httpx.ConnectError("refused", request=request)) == "connection"
    assert network_kind(httpx.RemoteProtocolError("bad", request=request)) == "connection"


def test_attempt_kinds_from_a_jobs_history() -> None:
    history = (
        {"attempt": 1, "event": "failed", "error": "Throttled: http://a/ answered 429: ..."},
        {"attempt": 2, "event": "lost", "worker": "w1"},
        {"attempt": 3, "event": "released"},
        {"attempt": 3, "event": "failed", "error": "FetchFailed: 5xx: http://a/ answered 500"},
        {"attempt": 4, "event": "failed", "error": None},
        {"attempt": 5, "event": "succeeded"},
    )
    assert attempt_kinds(history) == ["throttled", "lost", "5xx", "other"]
    assert set(attempt_kinds(history)) <= set(ERROR_KINDS)
