"""HostScope.takes: which host-targeted jobs a claim may take."""

from __future__ import annotations

from rota.models import ANY_HOST, DEFAULT_HOST_GRACE, HostScope

WEB_A = HostScope("web-a", grace=60.0)


def test_jobs_of_no_host_and_of_its_own_host_are_always_taken() -> None:
    assert WEB_A.takes(None, seen_at=None, enqueued_at=1_000.0, now=1_000.0)
    assert WEB_A.takes("web-a", seen_at=1_000.0, enqueued_at=1_000.0, now=1_000.0)


def test_another_host_is_taken_only_once_gone_for_the_grace() -> None:
    assert not WEB_A.takes("web-b", seen_at=1_000.0, enqueued_at=0.0, now=1_060.0)
    assert WEB_A.takes("web-b", seen_at=1_000.0, enqueued_at=0.0, now=1_060.5)


def test_a_host_never_seen_is_counted_from_the_send() -> None:
    assert not WEB_A.takes("web-b", seen_at=None, enqueued_at=1_000.0, now=1_030.0)
    assert WEB_A.takes("web-b", seen_at=None, enqueued_at=1_000.0, now=1_061.0)


def test_a_claim_of_no_host_takes_only_jobs_of_gone_hosts() -> None:
    assert ANY_HOST.grace == DEFAULT_HOST_GRACE
    assert not ANY_HOST.takes("web-a", seen_at=1_000.0, enqueued_at=0.0, now=1_100.0)
    assert ANY_HOST.takes("web-a", seen_at=1_000.0, enqueued_at=0.0, now=1_000.0 + 301)
