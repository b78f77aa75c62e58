"""The seen-set's pure logic: Bloom filter sizing, bit positions, settings."""

from __future__ import annotations

import math

import pytest

from rota import App
from rota.crawl import Crawler, SeenSet
from rota.crawl.seen import _sqlite_path, bloom_size, positions
from rota.errors import InvalidArgument


@pytest.mark.parametrize(
    ("capacity", "rate", "bits", "hashes"),
    [
        (10_000_000, 0.01, 95_850_584, 7),
        (1_000, 0.01, 9_586, 7),
        (1_000, 0.001, 14_378, 10),
        (100_000, 0.05, 623_523, 4),
        (1, 0.5, 2, 1),
    ],
)
def test_sizing_follows_the_optimal_formulas(
    capacity: int, rate: float, bits: int, hashes: int
) -> None:
    assert bloom_size(capacity, rate) == (bits, hashes)
    # the false-positive rate those give at capacity is close to the asked one
    expected = (1 - math.exp(-hashes * capacity / bits)) ** hashes
    if capacity >= 1_000:
        assert expected == pytest.approx(rate, rel=0.1)


def test_ten_million_urls_at_one_percent_fit_in_under_two_bytes_each() -> None:
    bits, _ = SeenSet(capacity=10_000_000, error_rate=0.01).size
    assert bits / 8 / 10_000_000 == pytest.approx(1.198, abs=0.001)


def test_positions_are_k_distinct_stable_bits_below_m() -> None:
    spots = positions("https://example.com/a", 95_850_584, 7)
    assert spots == positions("https://example.com/a", 95_850_584, 7)
    assert len(spots) == 7 and len(set(spots)) == 7
    assert all(0 <= bit < 95_850_584 for bit in spots)
    assert spots != positions("https://example.com/b", 95_850_584, 7)


def test_positions_spread_evenly() -> None:
    bits, counts = 64, [0] * 64
    for i in range(20_000):
        for bit in positions(f"https://example.com/{i}", bits, 3):
            counts[bit] += 1
    mean = 60_000 / bits
    assert max(abs(c - mean) for c in counts) < 0.15 * mean


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"capacity": 0}, "capacity must be at least 1"),
        ({"capacity": 1.5}, "capacity must be a whole number"),
        ({"error_rate": 0}, "error_rate must be between 0 and 1"),
        ({"error_rate": 1}, "error_rate must be between 0 and 1"),
        ({"error_rate": "1%"}, "error_rate must be between 0 and 1"),
        ({"capacity": 10**9, "error_rate": 1e-6}, "more than the 4294967296 one filter holds"),
    ],
)
def test_bad_sizes_are_refused(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        SeenSet(**kwargs)  # type: ignore[arg-type]


def test_a_crawler_on_a_store_without_seen_sets_says_which_stores_have_them() -> None:
    app = App("postgresql://localhost/rota")
    with pytest.raises(InvalidArgument, match="needs the app's store on Redis or SQLite"):
        Crawler(app, "site", seeds=["https://example.com/"], seen=SeenSet(capacity=1000))
    assert app.tasks == {} or "site.fetch" not in app.tasks


def test_a_crawler_takes_only_a_seen_set() -> None:
    app = App("sqlite:///unused.db")
    with pytest.raises(InvalidArgument, match=r"seen takes a rota\.crawl\.SeenSet"):
        Crawler(app, "site", seen=1000)  # type: ignore[arg-type]
    assert "site.fetch" not in app.tasks


@pytest.mark.parametrize(
    ("url", "path"),
    [
        ("sqlite:///rota.db", "rota.db"),
        ("sqlite:////var/lib/rota/rota.db?synchronous=full", "/var/lib/rota/rota.db"),
        ("sqlite://", "rota.db"),
    ],
)
def test_the_sqlite_seen_set_sits_beside_the_database(url: str, path: str) -> None:
    assert _sqlite_path(url) == path


@pytest.mark.parametrize("url", ["sqlite:///", "sqlite:///:memory:"])
def test_a_database_in_memory_has_no_file_to_keep_a_seen_set_beside(url: str) -> None:
    with pytest.raises(InvalidArgument, match="a SQLite store in a file"):
        SeenSet(capacity=1_000).open(url, "site")
