"""A worker's claim-ahead: as many jobs as its slots free within HOLD_FOR,
HOLD_MAX at most, none while jobs are long, a fixed number when given."""

from __future__ import annotations

import pytest

from rota.worker.ahead import HOLD_FOR, HOLD_MAX, SHORT_BELOW, ClaimAhead


def test_nothing_is_held_before_a_job_has_ended() -> None:
    assert ClaimAhead(8).jobs() == 0


def test_very_short_jobs_let_a_worker_hold_at_most_hold_max() -> None:
    ahead = ClaimAhead(8)
    for _ in range(5):
        ahead.done(HOLD_FOR / 1000)
    assert ahead.short()
    assert ahead.jobs() == HOLD_MAX


@pytest.mark.parametrize(
    ("slots", "seconds", "held"),
    [
        (2, 0.001, 40),
        (8, 0.005, 32),
        (50, 0.05, 20),
        (8, 0.05, 3),
        (8, 0.02, 8),
        (8, 0.16, 1),
        (8, 0.2, 0),
        (2, 0.03, 1),
        (8, 1.0, 0),
    ],
)
def test_longer_jobs_hold_what_the_slots_free_within_the_hold_time(
    slots: int, seconds: float, held: int
) -> None:
    ahead = ClaimAhead(slots)
    for _ in range(100):
        ahead.done(seconds)
    assert ahead.jobs() == held


def test_a_long_job_stops_the_holding_until_short_ones_bring_the_average_down() -> None:
    ahead = ClaimAhead(4)
    ahead.done(0.001)
    ahead.done(2.0)  # one spider among pings
    assert ahead.jobs() == 0
    shorts = 0
    while ahead.jobs() < 4:
        ahead.done(0.001)
        shorts += 1
    assert 10 <= shorts <= 30  # the average forgets a long job over a few dozen short ones


def test_a_fixed_prefetch_holds_that_many_whatever_the_jobs() -> None:
    for fixed in (0, 3):
        ahead = ClaimAhead(8, fixed)
        assert ahead.jobs() == fixed
        ahead.done(HOLD_FOR / 10)
        assert ahead.jobs() == fixed
        ahead.done(60.0)
        assert ahead.jobs() == fixed


@pytest.mark.parametrize(
    ("seconds", "short"), [(SHORT_BELOW / 2, True), (SHORT_BELOW * 1.5, False)]
)
def test_jobs_are_short_below_their_own_bound_whatever_is_held(seconds: float, short: bool) -> None:
    """Slots are paced by whether jobs are short, a bound of its own: jobs a
    little longer are not short, yet still held ahead."""
    ahead = ClaimAhead(8)
    for _ in range(50):
        ahead.done(seconds)
    assert ahead.short() is short
    assert ahead.jobs() > 0
