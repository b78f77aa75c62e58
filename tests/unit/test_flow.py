"""Flow-control arithmetic without a store: token buckets, breakers, fair
virtual time, limit declarations and key resolution, retry backoff."""

from __future__ import annotations

import heapq
import itertools
import math
import random
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from flow_cases import (
    BREAKER_CASES,
    BREAKER_RUNS,
    BUCKET_RUNS,
    BreakerCase,
    BreakerRun,
    BucketRun,
    Rules,
    breaker_room_of,
    replay_breaker,
    replay_bucket,
)
from rota import App, Breaker, InvalidArgument, Limit, Rate, flow
from rota.flow import Bucket, breaker_after, breaker_room, refill, take, virtual_start
from rota.limits import resolve_key
from rota.models import BreakerKey, ConcurrencyKey, RateKey
from rota.retry import backoff_delay

# -- the golden cases ------------------------------------------------------------------

RULES: Rules = flow


@pytest.mark.parametrize("run", BUCKET_RUNS, ids=lambda run: run.name)
def test_bucket_golden_cases(run: BucketRun) -> None:
    assert replay_bucket(RULES, run) == list(run.steps)


@pytest.mark.parametrize("run", BREAKER_RUNS, ids=lambda run: run.name)
def test_breaker_golden_cases(run: BreakerRun) -> None:
    assert replay_breaker(RULES, run) == list(run.steps)


@pytest.mark.parametrize("case", BREAKER_CASES, ids=lambda case: case.name)
def test_breaker_room_golden_cases(case: BreakerCase) -> None:
    assert breaker_room_of(RULES, case, now=1000.0) == case.room


# -- token bucket over time ---------------------------------------------------------------


def drain(rate: float, burst: int, start: float, end: float, step: float) -> list[float]:
    """Times at which a greedy taker polling every ``step`` s gets a token."""
    bucket: Bucket | None = None
    taken: list[float] = []
    steps = round((end - start) / step)
    for i in range(steps + 1):
        now = start + i * step
        bucket = refill(bucket, rate, burst, now)
        while (after := take(bucket)) is not None:
            bucket = after
            taken.append(now)
    return taken


@pytest.mark.parametrize(("rate", "burst"), [(20.0, 5), (2.0, 1), (0.5, 3), (100.0, 10)])
def test_no_window_gets_more_than_rate_times_window_plus_burst(rate: float, burst: int) -> None:
    taken = drain(rate, burst, start=1000.0, end=1030.0, step=0.001)
    assert len(taken) == pytest.approx(burst + rate * 30, abs=1)
    for i, first in enumerate(taken):
        for j in range(i, len(taken)):
            window = taken[j] - first
            assert j - i + 1 <= rate * window + burst + 1e-6


def test_a_burst_is_spent_at_once_then_the_rate_holds() -> None:
    taken = drain(rate=10.0, burst=5, start=0.0, end=1.0, step=0.001)
    assert taken[:5] == [0.0] * 5
    gaps = [b - a for a, b in itertools.pairwise(taken[5:])]
    assert all(gap == pytest.approx(0.1, abs=0.0011) for gap in gaps)


# -- circuit breaker --------------------------------------------------------------


def test_no_more_than_threshold_failures_whatever_the_interleaving() -> None:
    """Start as many jobs as there is room for, fail them in any order: the
    breaker opens after exactly ``threshold`` failures and no job is running."""
    rng = random.Random(3)
    for threshold in (1, 2, 3, 5, 8):
        failures, open_until, inflight, failed = 0, None, 0, 0
        while open_until is None:
            started = rng.randint(0, breaker_room(failures, None, inflight, False, threshold, 0.0))
            inflight += started
            if inflight and rng.random() < 0.7:
                inflight -= 1
                failed += 1
                failures, open_until = breaker_after(
                    failures, open_until, False, threshold, 10.0, 0.0
                )
        assert failed == threshold
        assert inflight == 0


# -- fair virtual time ----------------------------------------------------------


class FairQueue:
    """The store's fair ordering in miniature: each job gets ``virtual_start``
    when sent; a claim takes the lowest (vtime, seq) and advances the clock."""

    def __init__(self) -> None:
        self.clock = 0.0
        self.last: dict[str, float] = {}
        self.heap: list[tuple[float, int, str]] = []
        self.seq = 0

    def send(self, key: str, n: int = 1) -> None:
        for _ in range(n):
            vtime = virtual_start(self.last.get(key, 0.0), self.clock)
            self.last[key] = vtime
            self.seq += 1
            heapq.heappush(self.heap, (vtime, self.seq, key))

    def claim(self) -> str:
        vtime, _, key = heapq.heappop(self.heap)
        self.clock = max(self.clock, vtime)
        return key


def test_virtual_start_is_one_round_after_the_later_of_key_and_queue() -> None:
    assert virtual_start(0.0, 0.0) == 1.0
    assert virtual_start(7.0, 3.0) == 8.0  # the key's own backlog
    assert virtual_start(2.0, 50.0) == 51.0  # an idle key earns no credit


def test_keys_sent_together_are_served_round_robin() -> None:
    fair = FairQueue()
    fair.send("big", 30)
    fair.send("a", 3)
    fair.send("b", 3)
    order = [fair.claim() for _ in range(9)]
    assert order == ["big", "a", "b"] * 3


def test_a_key_arriving_late_is_served_within_a_round() -> None:
    fair = FairQueue()
    fair.send("big", 1000)
    assert [fair.claim() for _ in range(100)] == ["big"] * 100
    fair.send("small", 5)
    order = [fair.claim() for _ in range(10)]
    assert order.count("small") == 5, order
    assert fair.claim() == "big"


def test_an_idle_key_does_not_bank_credit_to_monopolise_later() -> None:
    fair = FairQueue()
    fair.send("a", 200)
    fair.send("b", 1)
    for _ in range(150):
        fair.claim()
    fair.send("b", 50)  # b was idle while a ran: it rejoins at the current round
    order = [fair.claim() for _ in range(20)]
    assert order.count("b") == 10 and order.count("a") == 10


def test_many_keys_with_one_holding_most_jobs_all_start_early() -> None:
    fair = FairQueue()
    fair.send("big", 900)
    for site in range(99):
        fair.send(f"site{site}", 1)
    order = [fair.claim() for _ in range(999)]
    last_small = max(i for i, key in enumerate(order) if key != "big")
    assert last_small < 200, "every small key is served in the first round"


# -- declarations ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "per_second"),
    [
        ("2/s", 2.0),
        ("100/m", 100 / 60),
        ("5/10s", 0.5),
        ("3/min", 3 / 60),
        ("1/h", 1 / 3600),
        ("24/d", 24 / 86400),
        ("1/ms", 1000.0),
        ("1.5/s", 1.5),
        (" 2 / s ", 2.0),
        ("60/2m", 0.5),
        (7.5, 7.5),
        (3, 3.0),
    ],
)
def test_rate_specs_give_tokens_per_second(spec: str | float, per_second: float) -> None:
    assert Rate(spec).per_second == pytest.approx(per_second)


@pytest.mark.parametrize(
    "spec", ["", "2", "2/", "/s", "2/x", "-1/s", "0/s", "abc", "2 per s", "2/s/s", 0, -1, 0.0]
)
def test_bad_rate_specs_are_refused_at_declaration(spec: str | float) -> None:
    with pytest.raises(InvalidArgument, match="rate"):
        Rate(spec)


@pytest.mark.parametrize("spec", ["2/0s", math.nan, math.inf])
def test_degenerate_rate_specs_are_refused_too(spec: str | float) -> None:
    with pytest.raises(InvalidArgument, match="rate"):
        Rate(spec)


@pytest.mark.parametrize("burst", [0, -1, 1.5, "5"])
def test_a_rate_burst_must_be_a_positive_integer(burst: object) -> None:
    with pytest.raises(InvalidArgument, match="burst"):
        Rate("1/s", burst=burst)  # type: ignore[arg-type]


@pytest.mark.parametrize("limit", [0, -3, 2.5, "4", None])
def test_a_concurrency_limit_must_be_a_positive_integer(limit: object) -> None:
    with pytest.raises(InvalidArgument, match="concurrency limit"):
        Limit("spiders", limit)  # type: ignore[arg-type]


def test_declarations_are_frozen_values() -> None:
    assert Limit("spiders", 4) == Limit("spiders", 4)
    assert hash(Rate("2/s", burst=3)) == hash(Rate("2/s", burst=3))
    with pytest.raises(AttributeError):
        Limit("spiders", 4).limit = 5  # type: ignore[misc]


@pytest.mark.parametrize("failures", [0, -1, 1.5])
def test_breaker_failures_must_be_a_positive_integer(failures: object) -> None:
    with pytest.raises(InvalidArgument, match="breaker failures"):
        Breaker(failures=failures)  # type: ignore[arg-type]


@pytest.mark.parametrize("cooldown", ["soon", -1, "-5s", None])
def test_breaker_cooldown_must_be_a_duration(cooldown: object) -> None:
    with pytest.raises(InvalidArgument, match="breaker cooldown"):
        Breaker(cooldown=cooldown)  # type: ignore[arg-type]


@pytest.mark.parametrize(("cooldown", "seconds"), [(30, 30.0), ("90s", 90.0), ("2m", 120.0)])
def test_breaker_cooldown_in_seconds(cooldown: float | str, seconds: float) -> None:
    assert Breaker(3, cooldown).cooldown_seconds == seconds


# -- keys ------------------------------------------------------------------------------


def host(url: str) -> str:
    return urlsplit(url).netloc


def test_keys_resolve_to_constant_function_value_or_default() -> None:
    args: tuple[str, ...] = ("https://a.example/x",)
    kwargs: dict[str, object] = {}
    assert resolve_key(None, "fetch", args, kwargs) == "fetch"
    assert resolve_key("spiders", "fetch", args, kwargs) == "spiders"
    assert resolve_key(host, "fetch", args, kwargs) == "a.example"
    assert resolve_key(lambda url, n=0: n, "fetch", (), {"url": "u", "n": 7}) == "7"


@pytest.mark.parametrize("value", [None, ""])
def test_a_key_function_returning_nothing_is_an_error(value: object) -> None:
    with pytest.raises(InvalidArgument, match="returned"):
        resolve_key(lambda url: value, "fetch", ("u",), {})


def test_send_time_resolution_fills_the_new_job(tmp_path: Path) -> None:
    app = App(f"sqlite:///{tmp_path / 'never-opened.db'}")

    @app.task(
        concurrency=(Limit(host, 2), Limit("spiders", 8)),
        rate=Rate("5/10s", burst=3, key=host),
        breaker=Breaker(4, "1m", key=host),
        unique=lambda url: url,
        unique_for="7d",
    )
    def fetch(url: str) -> None: ...

    assert fetch.name.endswith("fetch")
    job = fetch.new_job(("https://b.example/page",), {})
    assert job.concurrency == (ConcurrencyKey("b.example", 2), ConcurrencyKey("spiders", 8))
    assert job.rate == (RateKey("b.example", 0.5, 3),)
    assert job.breaker == (BreakerKey("b.example", 4, 60.0),)
    assert job.unique_key == f"{fetch.name}:https://b.example/page"
    assert job.unique_for == 7 * 86400
    assert job.limit_keys == ("b.example", "spiders")
    assert job.fair_key == "b.example"
    assert not (tmp_path / "never-opened.db").exists(), "resolving keys touches no store"


def test_a_key_function_failing_at_send_time_names_itself(tmp_path: Path) -> None:
    app = App(f"sqlite:///{tmp_path / 'never-opened.db'}")

    def nothing(url: str) -> str:
        return ""

    @app.task(concurrency=Limit(nothing, 1))
    def fetch(url: str) -> None: ...

    with pytest.raises(InvalidArgument, match="nothing"):
        fetch.new_job(("u",), {})


# -- retry backoff --------------------------------------------------------------------


def test_no_failure_means_no_delay() -> None:
    assert backoff_delay(0, base=1.0, cap=300.0, rand=0.9) == 0.0


def test_backoff_doubles_from_base() -> None:
    ceilings = [backoff_delay(n, base=1.0, cap=1e9, rand=0.999999) for n in range(1, 8)]
    assert ceilings == pytest.approx([1, 2, 4, 8, 16, 32, 64], rel=1e-5)


def test_backoff_is_capped() -> None:
    assert backoff_delay(30, base=1.0, cap=300.0, rand=0.0) == 150.0
    assert backoff_delay(30, base=1.0, cap=300.0, rand=0.999999) == pytest.approx(300.0)


def test_jitter_spreads_over_the_upper_half_of_the_ceiling() -> None:
    rng = random.Random(7)
    for failures in range(1, 15):
        ceiling = min(60.0, 0.5 * 2 ** (failures - 1))
        delays = [backoff_delay(failures, 0.5, 60.0, rng.random()) for _ in range(200)]
        assert all(ceiling / 2 <= d < ceiling for d in delays)
        assert max(delays) - min(delays) > ceiling / 4, "jitter actually spreads retries"


def test_backoff_never_shrinks_with_more_failures() -> None:
    for rand in (0.0, 0.3, 0.99):
        delays = [backoff_delay(n, 0.25, 100.0, rand) for n in range(1, 40)]
        assert delays == sorted(delays)


def test_backoff_after_very_many_failures_is_the_cap() -> None:
    assert backoff_delay(2000, base=1.0, cap=300.0, rand=0.999999) == pytest.approx(300.0)
