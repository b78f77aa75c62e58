"""redact_url masks every secret a store URL can carry and nothing else."""

from __future__ import annotations

import pytest

from rota.stores import redact_url


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("redis://:s3cr3t@h:6379/0", "redis://:***@h:6379/0"),
        ("redis://user:s3cr3t@h/0?namespace=n", "redis://user:***@h/0?namespace=n"),
        ("redis://h/0?password=s3cr3t&namespace=n", "redis://h/0?password=***&namespace=n"),
        ("rediss://h/0?PASSWORD=s3cr3t", "rediss://h/0?PASSWORD=***"),
        ("unix:///run/redis.sock?db=1&passwd=s3cr3t", "unix:///run/redis.sock?db=1&passwd=***"),
        (
            "postgresql://u:s3cr3t@h/db?sslpassword=s3cr3t&sslmode=require",
            "postgresql://u:***@h/db?sslpassword=***&sslmode=require",
        ),
        ("mysql://h/db?token=s3cr3t&auth_token=s3cr3t", "mysql://h/db?token=***&auth_token=***"),
        ("redis://h/0?client-secret=s3cr3t#x", "redis://h/0?client-secret=***#x"),
        ("redis://u:p%40ss@h/0", "redis://u:***@h/0"),
        ("redis://u:s3cr3t@h/0?password=s3cr3t", "redis://u:***@h/0?password=***"),
    ],
)
def test_secrets_are_masked(url: str, shown: str) -> None:
    assert redact_url(url) == shown
    assert "s3cr3t" not in redact_url(url)


@pytest.mark.parametrize(
    "url",
    [
        "sqlite:///rota.db",
        "sqlite:///data/rota.db?synchronous=normal",
        "redis://user@h:6379/0?namespace=n&retry_for=5",
    ],
)
def test_urls_without_secrets_are_unchanged(url: str) -> None:
    assert redact_url(url) == url
