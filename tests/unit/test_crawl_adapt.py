"""The adaptive per-host pace as arithmetic (rota.crawl.adapt): levels move
down fast on trouble, up slowly while the host is healthy, never past the
ceiling; pauses follow Retry-After."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from rota.crawl.adapt import (
    Adaptive,
    Event,
    Health,
    after_pause,
    classify,
    next_level,
    observe,
    parse_retry_after,
    pause_seconds,
)
from rota.errors import InvalidArgument

CONFIG = Adaptive(ramp_every=3, slow_factor=2.0, slow_margin=0.25, pause=5, max_pause=60)


def steady(seconds: float, n: int = 30) -> Health:
    health = Health()
    for _ in range(n):
        health = observe(health, seconds, CONFIG)
    return health


def test_the_moving_average_follows_response_times_and_best_creeps_up() -> None:
    first = observe(Health(), 0.2, CONFIG)
    assert first.average == first.best == 0.2
    second = observe(first, 1.2, CONFIG)
    assert second.average == pytest.approx(0.2 + 0.3 * 1.0)
    assert second.best == pytest.approx(0.2 + 0.01 * 0.3), "best moves 1 % of the gap"
    faster = second
    for _ in range(5):
        faster = observe(faster, 0.0, CONFIG)
    assert faster.average is not None and faster.average < 0.2
    assert faster.best == faster.average, "a better average becomes the best at once"


def test_statuses_become_events() -> None:
    health = steady(0.1)
    assert classify(429, health, CONFIG) is Event.THROTTLED
    assert classify(503, health, CONFIG) is Event.THROTTLED
    assert classify(500, health, CONFIG) is Event.ERROR
    assert classify(None, health, CONFIG) is Event.ERROR, "no answer at all"
    assert classify(200, health, CONFIG) is Event.OK
    assert classify(404, health, CONFIG) is Event.OK, "a missing page says nothing bad of the host"
    assert classify(304, health, CONFIG) is Event.OK


def test_slow_needs_both_the_factor_and_the_margin() -> None:
    fast = steady(0.01)
    jittery = observe(observe(fast, 0.1, CONFIG), 0.1, CONFIG)  # 5x slower, but by 0.05 s
    assert classify(200, jittery, CONFIG) is Event.OK, "noise on a fast host is not slowness"
    slow = fast
    for _ in range(5):
        slow = observe(slow, 1.0, CONFIG)
    assert classify(200, slow, CONFIG) is Event.SLOW
    bigger = steady(2.0)
    longer = observe(observe(bigger, 3.0, CONFIG), 3.0, CONFIG)  # +0.5 s, but only 1.25x
    assert classify(200, longer, CONFIG) is Event.OK


def test_healthy_answers_ramp_up_one_step_every_ramp_every_never_past_the_ceiling() -> None:
    level, health = 1, Health()
    seen = []
    for _ in range(12):
        level, health = next_level(level, 3, Event.OK, health, CONFIG)
        seen.append(level)
    assert seen == [1, 1, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3]
    assert health.streak == 0, "healthy answers at the ceiling bank nothing"
    level, health = next_level(3, 3, Event.ERROR, health, CONFIG)
    level, health = next_level(level, 3, Event.OK, health, CONFIG)
    assert (level, health.streak) == (1, 1), "after a fall the climb starts afresh"


def test_errors_halve_slowness_steps_down_and_neither_goes_below_one() -> None:
    health = Health(streak=2)
    level, health = next_level(8, 8, Event.ERROR, health, CONFIG)
    assert (level, health.streak) == (4, 0)
    level, health = next_level(level, 8, Event.SLOW, health, CONFIG)
    assert level == 3
    for _ in range(5):
        level, health = next_level(level, 8, Event.ERROR, health, CONFIG)
    assert level == 1


def test_a_throttle_returns_half_the_level_for_after_the_pause_and_counts() -> None:
    level, health = next_level(4, 4, Event.THROTTLED, Health(streak=2), CONFIG)
    assert (level, health.streak, health.throttles) == (2, 0, 1)
    level, health = next_level(1, 4, Event.THROTTLED, health, CONFIG)
    assert (level, health.throttles) == (1, 2)
    _, health = next_level(1, 4, Event.OK, health, CONFIG)
    assert health.throttles == 0, "a healthy answer ends the run of throttles"
    assert after_pause(4, 4) == 2 and after_pause(1, 4) == 1 and after_pause(9, 4) == 2


def test_nothing_moves_a_paused_host_but_throttles() -> None:
    for event in (Event.OK, Event.SLOW, Event.ERROR):
        level, health = next_level(0, 4, event, Health(streak=2), CONFIG)
        assert (level, health.streak) == (0, 0)
    level, health = next_level(0, 4, Event.THROTTLED, Health(), CONFIG)
    assert (level, health.throttles) == (0, 1)


def test_a_host_backs_off_then_recovers() -> None:
    """4 at once; a throttle: paused, back at 2; an error: 1; then healthy
    answers bring it back to 4, one step per 3 answers."""
    level, health = 4, Health()
    level, health = next_level(level, 4, Event.THROTTLED, health, CONFIG)
    level, health = next_level(level, 4, Event.ERROR, health, CONFIG)
    assert level == 1
    trajectory = []
    for _ in range(12):
        level, health = next_level(level, 4, Event.OK, health, CONFIG)
        trajectory.append(level)
    assert trajectory == [1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 4]


def test_pauses_follow_retry_after_else_double_and_are_capped() -> None:
    assert pause_seconds(12.0, 1, CONFIG) == 12.0
    assert pause_seconds(0.0, 1, CONFIG) == 1.0, "at least a second"
    assert pause_seconds(3600.0, 1, CONFIG) == 60.0, "capped at max_pause"
    assert [pause_seconds(None, n, CONFIG) for n in (1, 2, 3, 4, 5)] == [5, 10, 20, 40, 60]
    assert pause_seconds(None, 10_000, CONFIG) == 60.0


def test_retry_after_is_seconds_or_an_http_date() -> None:
    now = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)
    later = format_datetime(now + timedelta(seconds=90), usegmt=True)
    earlier = format_datetime(now - timedelta(seconds=90), usegmt=True)
    assert parse_retry_after("120", now.timestamp()) == 120.0
    assert parse_retry_after(" 7 ", now.timestamp()) == 7.0
    assert parse_retry_after(later, now.timestamp()) == pytest.approx(90.0)
    assert parse_retry_after(earlier, now.timestamp()) == 0.0
    for unreadable in (None, "", "soon", "-5", "1.5", "Mon, 99 Foo 2025"):
        assert parse_retry_after(unreadable, now.timestamp()) is None


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"ramp_every": 0}, "ramp_every must be at least 1"),
        ({"ramp_every": True}, "ramp_every must be an integer"),
        ({"slow_factor": 0.5}, "slow_factor must be a number from 1"),
        ({"slow_factor": float("nan")}, "slow_factor must be a number from 1"),
        ({"smoothing": 0}, "smoothing must be a number above 0"),
        ({"pause": 0}, "pause must be above 0"),
        ({"pause": "10m", "max_pause": "1m"}, r"max_pause \(60 s\) is below pause \(600 s\)$"),
        (
            {"max_pause": "4s"},
            r"max_pause \(4 s\) is below pause \(5 s, its default: give pause= too\)$",
        ),
        ({"slow_margin": "soon"}, "slow_margin 'soon' is not a duration"),
    ],
)
def test_bad_settings_are_refused_precisely(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        Adaptive(**kwargs)  # type: ignore[arg-type]


def test_durations_are_read_as_rota_reads_them() -> None:
    config = Adaptive(pause="30s", max_pause="2h", slow_margin="500ms")
    assert (config.pause, config.max_pause, config.slow_margin) == (30.0, 7200.0, 0.5)
