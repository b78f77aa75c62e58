"""A worker's claim-ahead: one job per slot while its jobs are short, none
while they are long, a fixed number when given."""

from __future__ import annotations

from rota.worker.ahead import SHORT_JOB, ClaimAhead


def test_nothing_is_held_before_a_job_has_ended() -> None:
    assert ClaimAhead(8).jobs() == 0


def test_short_jobs_let_a_worker_hold_one_job_per_slot() -> None:
    ahead = ClaimAhead(8)
    for _ in range(5):
        ahead.done(SHORT_JOB / 10)
    assert ahead.jobs() == 8


def test_a_long_job_stops_the_holding_until_short_ones_bring_the_average_down() -> None:
    ahead = ClaimAhead(4)
    ahead.done(0.001)
    ahead.done(2.0)  # one spider among pings
    assert ahead.jobs() == 0
    shorts = 0
    while ahead.jobs() == 0:
        ahead.done(0.001)
        shorts += 1
    assert 15 <= shorts <= 30  # the average forgets a long job over a few dozen short ones
    assert ahead.jobs() == 4


def test_long_jobs_hold_nothing() -> None:
    ahead = ClaimAhead(8)
    for _ in range(100):
        ahead.done(SHORT_JOB * 2)
    assert ahead.jobs() == 0


def test_a_fixed_prefetch_holds_that_many_whatever_the_jobs() -> None:
    for fixed in (0, 3):
        ahead = ClaimAhead(8, fixed)
        assert ahead.jobs() == fixed
        ahead.done(SHORT_JOB / 10)
        assert ahead.jobs() == fixed
        ahead.done(60.0)
        assert ahead.jobs() == fixed
