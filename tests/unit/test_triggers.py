"""Fire-time arithmetic: triggers, daylight saving time, misfires, jitter."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

import rota.scheduling
from rota._validate import MAX_TIME
from rota.errors import InvalidSchedule
from rota.scheduling import (
    FirePlan,
    Trigger,
    at,
    cron,
    every,
    jitter_offset,
    plan_fires,
    trigger_from_json,
)
from rota.scheduling.triggers import CronTrigger, IntervalTrigger


def ts(
    year: int,
    month: int,
    day: int,
    hour: int = 0,
    minute: int = 0,
    second: int = 0,
    *,
    tz: str = "UTC",
    fold: int = 0,
) -> float:
    """Epoch seconds of a wall time in ``tz``."""
    return datetime(
        year, month, day, hour, minute, second, tzinfo=ZoneInfo(tz), fold=fold
    ).timestamp()


def utc(t: float | None) -> str:
    assert t is not None
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d %H:%M:%S")


def walk(trigger: Trigger, after: float, n: int) -> list[str]:
    """The next ``n`` fires after ``after``, as UTC strings."""
    out = []
    t: float | None = after
    for _ in range(n):
        assert t is not None
        t = trigger.next_fire(t)
        out.append(utc(t))
    return out


def test_public_surface_is_pinned() -> None:
    assert sorted(rota.scheduling.__all__) == [
        "FirePlan",
        "Trigger",
        "at",
        "cron",
        "every",
        "jitter_offset",
        "plan_fires",
        "trigger_from_json",
    ]
    for name in rota.scheduling.__all__:
        assert getattr(rota.scheduling, name) is not None


# -- at -----------------------------------------------------------------------


def test_at_fires_once_then_is_exhausted() -> None:
    when = ts(2027, 1, 1)
    trigger = at(datetime(2027, 1, 1))  # naive means UTC
    assert trigger.next_fire(when - 1) == when
    assert trigger.next_fire(when) is None
    assert trigger.next_fire(when + 1) is None


def test_at_first_fire_returns_a_past_time_so_it_still_fires_once() -> None:
    when = ts(2027, 1, 1)
    trigger = at(datetime(2027, 1, 1))
    assert trigger.first_fire(when - 60) == when
    assert trigger.first_fire(when + 3600) == when


def test_at_converts_an_aware_datetime_to_utc() -> None:
    trigger = at(datetime(2027, 1, 1, 9, tzinfo=ZoneInfo("Asia/Shanghai")))
    assert trigger.first_fire(0) == ts(2027, 1, 1, 1)


def test_at_rejects_a_non_datetime() -> None:
    with pytest.raises(InvalidSchedule, match=r"at\(\) time must be a datetime, got str"):
        at("2027-01-01")  # type: ignore[arg-type]


# -- every --------------------------------------------------------------------


def test_every_without_start_is_anchored_at_the_epoch() -> None:
    trigger = every(minutes=15)
    assert trigger.next_fire(ts(2026, 5, 5, 10, 7, 30)) == ts(2026, 5, 5, 10, 15)
    assert trigger.next_fire(ts(2026, 5, 5, 10, 15)) == ts(2026, 5, 5, 10, 30)
    # first_fire includes now when now is aligned
    assert trigger.first_fire(ts(2026, 5, 5, 10, 15)) == ts(2026, 5, 5, 10, 15)
    assert trigger.first_fire(ts(2026, 5, 5, 10, 15, 1)) == ts(2026, 5, 5, 10, 30)


def test_every_with_start_is_anchored_at_start() -> None:
    trigger = every(minutes=15, start=datetime(2026, 1, 1, 0, 7))
    assert trigger.first_fire(ts(2025, 12, 1)) == ts(2026, 1, 1, 0, 7)
    assert trigger.first_fire(ts(2026, 1, 1, 0, 7)) == ts(2026, 1, 1, 0, 7)
    assert walk(trigger, ts(2026, 3, 1, 12, 0), 3) == [
        "2026-03-01 12:07:00",
        "2026-03-01 12:22:00",
        "2026-03-01 12:37:00",
    ]


def test_every_never_fires_at_or_after_end() -> None:
    trigger = every(hours=1, start=datetime(2027, 1, 1), end=datetime(2027, 1, 1, 3))
    assert walk(trigger, ts(2026, 12, 31), 3) == [
        "2027-01-01 00:00:00",
        "2027-01-01 01:00:00",
        "2027-01-01 02:00:00",
    ]
    assert trigger.next_fire(ts(2027, 1, 1, 2)) is None  # 03:00 is the end: excluded
    assert trigger.first_fire(ts(2027, 1, 1, 3)) is None
    assert trigger.count_fires(ts(2026, 1, 1), ts(2028, 1, 1)) == 3


def test_every_accepts_timedelta_seconds_or_unit_keywords() -> None:
    a = every(timedelta(minutes=90))
    b = every(5400)
    c = every(hours=1, minutes=30)
    assert a == b == c
    assert a.to_json()["interval"] == 5400.0


def test_every_fractional_interval_is_deterministic_and_strictly_increasing() -> None:
    trigger = every(0.1)
    t = ts(2026, 1, 1)
    fires = []
    for _ in range(50):
        nxt = trigger.next_fire(t)
        assert nxt is not None
        assert nxt > t
        fires.append(nxt)
        t = nxt
    # Every fire is exactly k * interval from the anchor, the same on every machine.
    assert all(f == round(f / 0.1) * 0.1 for f in fires)
    assert every(0.1).next_fire(ts(2026, 1, 1)) == fires[0]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"interval": 0}, r"interval greater than zero, got 0\.0 seconds"),
        ({"interval": -5}, r"interval greater than zero, got -5\.0 seconds"),
        ({}, r"interval greater than zero, got 0\.0 seconds"),
        ({"interval": math.nan}, r"interval greater than zero, got nan seconds"),
        ({"interval": 10, "seconds": 5}, r"either as its first argument or as seconds="),
        ({"interval": "10"}, r"timedelta or a number of seconds, got str"),
        (
            {"interval": 60, "start": datetime(2027, 1, 1), "end": datetime(2026, 1, 1)},
            r"end \(2026-01-01 00:00 UTC\) must be after its start \(2027-01-01 00:00 UTC\)",
        ),
    ],
)
def test_every_rejects_bad_input(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidSchedule, match=message):
        every(**kwargs)  # type: ignore[arg-type]


# -- cron: plain --------------------------------------------------------------


def test_cron_every_fifteen_minutes_in_utc() -> None:
    assert walk(cron("*/15 * * * *"), ts(2026, 5, 5, 10, 7), 3) == [
        "2026-05-05 10:15:00",
        "2026-05-05 10:30:00",
        "2026-05-05 10:45:00",
    ]


def test_cron_first_fire_includes_now() -> None:
    trigger = cron("0 * * * *")
    assert trigger.first_fire(ts(2026, 5, 5, 10)) == ts(2026, 5, 5, 10)
    assert trigger.next_fire(ts(2026, 5, 5, 10)) == ts(2026, 5, 5, 11)


def test_cron_month_ends_skip_short_months() -> None:
    assert walk(cron("0 0 31 * *"), ts(2027, 1, 31), 6) == [
        "2027-03-31 00:00:00",
        "2027-05-31 00:00:00",
        "2027-07-31 00:00:00",
        "2027-08-31 00:00:00",
        "2027-10-31 00:00:00",
        "2027-12-31 00:00:00",
    ]


def test_cron_leap_day_waits_for_a_leap_year() -> None:
    assert walk(cron("0 0 29 2 *"), ts(2027, 1, 1), 2) == [
        "2028-02-29 00:00:00",
        "2032-02-29 00:00:00",
    ]


def test_cron_six_fields_put_seconds_first() -> None:
    assert walk(cron("*/5 * * * * *"), ts(2026, 1, 1, 12, 0, 1), 3) == [
        "2026-01-01 12:00:05",
        "2026-01-01 12:00:10",
        "2026-01-01 12:00:15",
    ]
    assert walk(cron("30 0 3 * * *"), ts(2026, 1, 1), 2) == [
        "2026-01-01 03:00:30",
        "2026-01-02 03:00:30",
    ]


def test_cron_aliases_expand() -> None:
    after = ts(2026, 5, 5, 10, 7)
    assert cron("@daily").next_fire(after) == ts(2026, 5, 6)
    assert cron("@hourly").next_fire(after) == ts(2026, 5, 5, 11)


def test_cron_in_a_zone_without_dst_is_always_a_day_apart() -> None:
    trigger = cron("0 3 * * *", "Asia/Shanghai")
    t = trigger.next_fire(ts(2026, 1, 1))
    assert utc(t) == "2026-01-01 19:00:00"  # 03:00 CST on Jan 2
    previous = t
    for _ in range(365):
        assert previous is not None
        t = trigger.next_fire(previous)
        assert t is not None
        assert t - previous == 86400
        previous = t


# -- cron: daylight saving time -------------------------------------------------


def test_new_york_spring_forward_skips_the_missing_wall_time() -> None:
    # 2026-03-08 02:00 EST jumps to 03:00 EDT: 02:30 does not exist that day.
    trigger = cron("30 2 * * *", "America/New_York")
    assert walk(trigger, ts(2026, 3, 7, tz="America/New_York"), 2) == [
        "2026-03-07 07:30:00",  # 02:30 EST
        "2026-03-09 06:30:00",  # 02:30 EDT; nothing on the 8th
    ]


def test_new_york_fall_back_fires_a_repeated_wall_time_once() -> None:
    # 2026-11-01 02:00 EDT falls back to 01:00 EST: 01:30 happens twice.
    trigger = cron("30 1 * * *", "America/New_York")
    assert walk(trigger, ts(2026, 10, 31, 12, tz="America/New_York"), 2) == [
        "2026-11-01 05:30:00",  # 01:30 EDT, the first occurrence
        "2026-11-02 06:30:00",  # 01:30 EST next day; not 06:30 on the 1st
    ]
    # From inside the repeated hour, the second 01:30 is not a fire either.
    inside = ts(2026, 11, 1, 1, 10, tz="America/New_York", fold=1)
    assert utc(trigger.next_fire(inside)) == "2026-11-02 06:30:00"


def test_new_york_fixed_hours_fire_once_through_the_repeated_hour() -> None:
    trigger = cron("0,30 1-2 * * *", "America/New_York")
    assert walk(trigger, ts(2026, 11, 1, 0, 0, tz="America/New_York"), 4) == [
        "2026-11-01 05:00:00",  # 01:00 EDT
        "2026-11-01 05:30:00",  # 01:30 EDT
        "2026-11-01 07:00:00",  # 02:00 EST (01:00 and 01:30 EST are repeats)
        "2026-11-01 07:30:00",  # 02:30 EST
    ]


def test_new_york_wildcard_hour_keeps_elapsed_time_across_both_changes() -> None:
    trigger = cron("*/30 * * * *", "America/New_York")
    fall = walk(trigger, ts(2026, 11, 1, 0, 45, tz="America/New_York"), 5)
    assert fall == [
        "2026-11-01 05:00:00",  # 01:00 EDT
        "2026-11-01 05:30:00",  # 01:30 EDT
        "2026-11-01 06:00:00",  # 01:00 EST
        "2026-11-01 06:30:00",  # 01:30 EST
        "2026-11-01 07:00:00",  # 02:00 EST
    ]
    spring = walk(trigger, ts(2026, 3, 8, 1, 15, tz="America/New_York"), 2)
    assert spring == [
        "2026-03-08 06:30:00",  # 01:30 EST
        "2026-03-08 07:00:00",  # 03:00 EDT, half an hour later
    ]
    # Starting inside the first occurrence of the repeated hour still finds
    # the repeat before 02:00 EST.
    first_pass = ts(2026, 11, 1, 1, 40, tz="America/New_York", fold=0)
    assert utc(trigger.next_fire(first_pass)) == "2026-11-01 06:00:00"


def test_berlin_spring_gap_and_autumn_repeat() -> None:
    trigger = cron("30 2 * * *", "Europe/Berlin")
    assert walk(trigger, ts(2026, 3, 28, tz="Europe/Berlin"), 2) == [
        "2026-03-28 01:30:00",  # 02:30 CET
        "2026-03-30 00:30:00",  # 02:30 CEST; the 29th has no 02:30
    ]
    assert walk(trigger, ts(2026, 10, 24, 12, tz="Europe/Berlin"), 2) == [
        "2026-10-25 00:30:00",  # 02:30 CEST, the first of two
        "2026-10-26 01:30:00",  # 02:30 CET next day
    ]


def test_sydney_southern_hemisphere_transitions() -> None:
    trigger = cron("30 2 * * *", "Australia/Sydney")
    # DST ends 2026-04-05 03:00 AEDT -> 02:00 AEST: 02:30 repeats, fires once.
    assert walk(trigger, ts(2026, 4, 4, 12, tz="Australia/Sydney"), 2) == [
        "2026-04-04 15:30:00",  # 02:30 AEDT on the 5th
        "2026-04-05 16:30:00",  # 02:30 AEST on the 6th
    ]
    # DST starts 2026-10-04 02:00 AEST -> 03:00 AEDT: 02:30 is skipped.
    assert walk(trigger, ts(2026, 10, 3, tz="Australia/Sydney"), 2) == [
        "2026-10-02 16:30:00",  # 02:30 AEST on the 3rd
        "2026-10-04 15:30:00",  # 02:30 AEDT on the 5th
    ]


@pytest.mark.parametrize(
    ("expr", "tz", "day", "matches"),
    [
        ("*/20 * * * *", "America/New_York", (2026, 11, 1), lambda h, m: m % 20 == 0),
        ("*/20 * * * *", "America/New_York", (2026, 3, 8), lambda h, m: m % 20 == 0),
        (
            "*/20 1-2 * * *",
            "America/New_York",
            (2026, 11, 1),
            lambda h, m: h in (1, 2) and m % 20 == 0,
        ),
        ("*/15 2 * * *", "Europe/Berlin", (2026, 10, 25), lambda h, m: h == 2 and m % 15 == 0),
        ("0,30 2 * * *", "Australia/Sydney", (2026, 4, 5), lambda h, m: h == 2 and m in (0, 30)),
        ("*/15 * * * *", "Australia/Lord_Howe", (2026, 4, 5), lambda h, m: m % 15 == 0),
    ],
)
def test_cron_agrees_with_a_minute_by_minute_scan(
    expr: str, tz: str, day: tuple[int, int, int], matches: Callable[[int, int], bool]
) -> None:
    """Across a DST day, the fires are exactly the matching minutes, each wall
    time once unless the hour field is '*', and counting agrees with walking."""
    zone = ZoneInfo(tz)
    start = ts(*day, tz=tz) - 6 * 3600
    end = start + 36 * 3600
    every_hour = expr.split()[1] == "*"
    expected = []
    for minute in range(int(start) // 60 + 1, int(end) // 60 + 1):
        local = datetime.fromtimestamp(minute * 60, zone)
        if matches(local.hour, local.minute) and (local.fold == 0 or every_hour):
            expected.append(minute * 60.0)
    trigger = cron(expr, tz)
    walked = []
    t = trigger.next_fire(start)
    while t is not None and t <= end:
        walked.append(t)
        t = trigger.next_fire(t)
    assert walked == expected
    assert trigger.count_fires(start, end) == len(expected)
    assert trigger.last_fires(start, end, 3) == expected[-3:]


# -- cron: errors ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        ("0 25 * * *", "cron field 'hour' has invalid value '25' in '0 25 * * *'"),
        ("61 * * * *", "cron field 'minute' has invalid value '61' in '61 * * * *'"),
        ("0 0 32 * *", "cron field 'day of month' has invalid value '32' in '0 0 32 * *'"),
        ("0 0 * 13 *", "cron field 'month' has invalid value '13' in '0 0 * 13 *'"),
        ("0 0 * * MON-XYZ", "cron field 'day of week' has invalid value 'MON-XYZ'"),
        ("70 * * * * *", "cron field 'second' has invalid value '70' in '70 * * * * *'"),
        ("*/0 * * * *", "cron field 'minute' has invalid value '*/0'"),
        ("R * * * *", "cron field 'minute' has unsupported value 'R'"),
        ("0 H * * *", "cron field 'hour' has unsupported value 'H'"),
        ("* * *", "has 3 fields; expected 5"),
        ("0 0 1 1 * 2027 x", "has 7 fields; expected 5"),
        ("@sometimes", "unknown cron alias '@sometimes'"),
        ("0 0 30 2 *", "cron expression '0 0 30 2 *' never fires"),
    ],
)
def test_cron_rejects_bad_expressions_precisely(expr: str, message: str) -> None:
    with pytest.raises(InvalidSchedule) as info:
        cron(expr)
    assert message in str(info.value)


@pytest.mark.parametrize("tz", ["Mars/Olympus", "../../etc/passwd", ""])
def test_cron_rejects_unknown_time_zones(tz: str) -> None:
    with pytest.raises(InvalidSchedule, match=f"unknown time zone {tz!r}"):
        cron("0 0 * * *", tz)


# -- JSON and describe ------------------------------------------------------------


@pytest.mark.parametrize(
    "trigger",
    [
        at(datetime(2027, 1, 1, 12, 30, 15, 250000)),
        every(minutes=15),
        every(0.25, start=datetime(2026, 1, 1, 0, 7), end=datetime(2026, 2, 1)),
        cron("*/15 * * * *"),
        cron("30 0 3 * * *", "Asia/Shanghai"),
    ],
    ids=["at", "every", "every-bounded", "cron", "cron-seconds-tz"],
)
def test_json_round_trip(trigger: Trigger) -> None:
    data = json.loads(json.dumps(trigger.to_json()))
    assert data["type"] in ("at", "every", "cron")
    again = trigger_from_json(data)
    assert again == trigger
    assert again.describe() == trigger.describe()
    after = ts(2026, 1, 15, 10, 1)
    assert again.next_fire(after) == trigger.next_fire(after)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"type": "weekly"}, "unknown trigger type 'weekly'"),
        ({}, "unknown trigger type None"),
        ({"type": "every"}, "every trigger is missing 'interval'"),
        ({"type": "at", "time": "soon"}, "at time must be a number, got 'soon'"),
        ({"type": "every", "interval": 0}, "interval greater than zero"),
        ({"type": "cron", "expr": "0 25 * * *"}, "cron field 'hour' has invalid value '25'"),
    ],
)
def test_trigger_from_json_rejects_bad_data(data: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidSchedule) as info:
        trigger_from_json(data)
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("trigger", "text"),
    [
        (every(minutes=15), "every 15 minutes"),
        (every(hours=1), "every hour"),
        (every(5400), "every 1 hour 30 minutes"),
        (every(days=2), "every 2 days"),
        (every(1.5), "every 1.5 seconds"),
        (
            every(minutes=5, start=datetime(2027, 1, 1), end=datetime(2027, 2, 1, 0, 0, 30)),
            "every 5 minutes from 2027-01-01 00:00 UTC until 2027-02-01 00:00:30 UTC",
        ),
        (at(datetime(2027, 1, 1)), "at 2027-01-01 00:00 UTC"),
        (cron("0  3 * * *", "Asia/Shanghai"), "cron 0 3 * * * (Asia/Shanghai)"),
    ],
)
def test_describe(trigger: Trigger, text: str) -> None:
    assert trigger.describe() == text


# -- jitter -------------------------------------------------------------------------


def test_jitter_is_in_range_and_spread() -> None:
    values = [jitter_offset("report", 1_800_000_000.0 + 60 * k, 30.0) for k in range(1000)]
    assert all(0.0 <= v < 30.0 for v in values)
    assert min(values) < 3.0
    assert max(values) > 27.0
    assert len(set(values)) > 990


def test_jitter_is_deterministic_per_schedule_and_fire() -> None:
    first = jitter_offset("report", 1_800_000_000.0, 30.0)
    assert jitter_offset("report", 1_800_000_000.0, 30.0) == first
    assert jitter_offset("report", 1_800_000_000, 30.0) == first  # int and float agree
    assert jitter_offset("billing", 1_800_000_000.0, 30.0) != first
    assert jitter_offset("report", 1_800_000_060.0, 30.0) != first


def test_jitter_zero_and_bad_values() -> None:
    assert jitter_offset("report", 1_800_000_000.0, 0) == 0.0
    with pytest.raises(InvalidSchedule, match="jitter must be a number of seconds >= 0"):
        jitter_offset("report", 1_800_000_000.0, -1.0)
    with pytest.raises(InvalidSchedule, match="jitter must be a number of seconds >= 0"):
        jitter_offset("report", 1_800_000_000.0, math.inf)


# -- plan_fires ---------------------------------------------------------------------

T = ts(2026, 6, 1, 12)  # aligned to every minute and every hour


def test_plan_on_time_fires_once_and_advances() -> None:
    plan = plan_fires(every(60), T, T)
    assert plan == FirePlan(fires=(T,), dropped=0, next_fire=T + 60)


def test_plan_not_yet_due_changes_nothing() -> None:
    assert plan_fires(every(60), T, T - 1) == FirePlan((), 0, T)


def test_plan_coalesce_after_downtime_fires_the_latest_once() -> None:
    plan = plan_fires(every(60), T, T + 3630)  # 61 fires were due
    assert plan == FirePlan(fires=(T + 3600,), dropped=60, next_fire=T + 3660)


def test_plan_all_fires_every_missed_time_oldest_first() -> None:
    plan = plan_fires(every(60), T, T + 3630, misfire="all")
    assert plan.fires == tuple(T + 60 * k for k in range(61))
    assert plan.dropped == 0
    assert plan.next_fire == T + 3660


def test_plan_all_is_bounded_by_max_catchup_keeping_the_newest() -> None:
    plan = plan_fires(every(60), T, T + 3630, misfire="all", max_catchup=10)
    assert plan.fires == tuple(T + 60 * k for k in range(51, 61))
    assert plan.dropped == 51
    assert plan.late == 0  # none older than a grace: all over the catch-up limit


def test_plan_all_drops_fires_older_than_grace() -> None:
    plan = plan_fires(every(60), T, T + 3630, misfire="all", grace=600)
    # cutoff is T + 3030: fires T+3060 .. T+3600 survive
    assert plan.fires == tuple(T + 60 * k for k in range(51, 61))
    assert plan.dropped == 51
    assert plan.late == 51
    # a fire exactly at the cutoff is still within grace
    edge = plan_fires(every(60), T, T + 3600, misfire="all", grace=60)
    assert edge.fires == (T + 3540, T + 3600)


def test_plan_coalesce_with_grace_fires_the_latest_if_recent() -> None:
    plan = plan_fires(every(60), T, T + 3630, grace=60)
    assert plan == FirePlan(fires=(T + 3600,), dropped=60, next_fire=T + 3660, late=60)


def test_plan_coalesce_with_grace_fires_nothing_if_the_latest_is_too_old() -> None:
    plan = plan_fires(every(hours=1), T, T + 1800, grace=60)
    assert plan == FirePlan(fires=(), dropped=1, next_fire=T + 3600, late=1)


def test_plan_one_shot_in_the_past_fires_once_within_grace() -> None:
    trigger = at(datetime(2026, 6, 1, 12))
    assert plan_fires(trigger, T, T + 10) == FirePlan((T,), 0, None)
    assert plan_fires(trigger, T, T + 10, grace=30) == FirePlan((T,), 0, None)
    assert plan_fires(trigger, T, T + 10, grace=5) == FirePlan((), 1, None, late=1)


def test_plan_ends_with_the_trigger() -> None:
    trigger = every(hours=1, start=datetime(2026, 6, 1, 12), end=datetime(2026, 6, 1, 15))
    plan = plan_fires(trigger, T, T + 86400, misfire="all")
    assert plan == FirePlan((T, T + 3600, T + 7200), 0, None)


def test_plan_cron_catch_up_across_fall_back_counts_the_repeat_once() -> None:
    trigger = cron("30 1 * * *", "America/New_York")
    first = ts(2026, 10, 31, 1, 30, tz="America/New_York")
    plan = plan_fires(trigger, first, ts(2026, 11, 3, tz="America/New_York"), misfire="all")
    assert [utc(t) for t in plan.fires] == [
        "2026-10-31 05:30:00",
        "2026-11-01 05:30:00",
        "2026-11-02 06:30:00",
    ]
    assert utc(plan.next_fire) == "2026-11-03 06:30:00"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"misfire": "latest"}, "misfire policy must be 'coalesce' or 'all', not 'latest'"),
        ({"grace": -1.0}, "misfire grace must be a number of seconds >= 0, not -1.0"),
        ({"max_catchup": 0}, "max_catchup must be an integer >= 1, not 0"),
    ],
)
def test_plan_rejects_bad_policy(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidSchedule) as info:
        plan_fires(every(60), T, T, **kwargs)  # type: ignore[arg-type]
    assert str(info.value) == message


class _CountingCalls:
    def __init__(self, monkeypatch: pytest.MonkeyPatch, cls: type[Trigger]) -> None:
        self.calls = 0
        original = cls.next_fire

        def spy(trigger: Trigger, after: float) -> float | None:
            self.calls += 1
            return original(trigger, after)

        monkeypatch.setattr(cls, "next_fire", spy)


def test_plan_after_a_week_of_per_second_fires_does_not_walk_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    week = 7 * 86400
    spy = _CountingCalls(monkeypatch, IntervalTrigger)
    plan = plan_fires(every(1), T - week, T)
    assert plan == FirePlan(fires=(T,), dropped=week, next_fire=T + 1)

    catch_up = plan_fires(every(1), T - week, T, misfire="all")
    assert catch_up.fires == tuple(T - 99 + k for k in range(100))
    assert catch_up.dropped == week + 1 - 100
    assert spy.calls <= 4


def test_plan_after_a_week_of_per_second_cron_fires_does_not_walk_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    week = 7 * 86400
    spy = _CountingCalls(monkeypatch, CronTrigger)
    trigger = cron("* * * * * *", "Europe/Berlin")
    start = ts(2026, 10, 22)  # the week spans Berlin's fall back
    plan = plan_fires(trigger, start, start + week)
    assert plan == FirePlan(fires=(start + week,), dropped=week, next_fire=start + week + 1)

    catch_up = plan_fires(trigger, start, start + week, misfire="all", max_catchup=50)
    assert catch_up.fires == tuple(start + week - 49 + k for k in range(50))
    assert catch_up.dropped == week + 1 - 50
    assert spy.calls < 500


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (
            lambda: at(datetime(9999, 12, 31, 23, 59, 59)),
            "at() time 9999-12-31 23:59:59 UTC is past 9999-12-31 00:00 UTC, "
            "the latest time rota keeps",
        ),
        (
            lambda: at(datetime(1, 1, 1, tzinfo=UTC)),
            "at() time 0001-01-01 00:00 UTC is before 0001-01-02 00:00 UTC, "
            "the earliest time rota keeps",
        ),
        (
            lambda: every(60, end=datetime(9999, 12, 31, 12)),
            "every() end 9999-12-31 12:00 UTC is past 9999-12-31 00:00 UTC",
        ),
        (
            lambda: trigger_from_json({"type": "at", "time": -9e10}),
            "at() time epoch -90000000000.0 is before 0001-01-02 00:00 UTC",
        ),
    ],
)
def test_a_trigger_time_no_date_can_show_is_refused(
    make: Callable[[], Trigger], message: str
) -> None:
    with pytest.raises(InvalidSchedule) as refused:
        make()
    assert message in str(refused.value)


def test_an_interval_has_no_fire_past_the_latest_time_rota_keeps() -> None:
    last_day = datetime(9999, 12, 30, tzinfo=UTC)
    trigger = every(timedelta(days=1), start=last_day)
    assert trigger.next_fire(last_day.timestamp()) == MAX_TIME
    assert trigger.next_fire(MAX_TIME) is None
    assert trigger.count_fires(0.0, 1e12) == 2
    assert at(datetime(9999, 12, 31)).next_fire(0.0) == MAX_TIME


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: every(1e12), "every() interval of 1e+12 s is more than 100 years"),
        (lambda: every(days=36_600), "every() interval of 3.16224e+09 s is more than 100 years"),
        (
            lambda: trigger_from_json({"type": "every", "interval": 1e308}),
            "every() interval of 1e+308 s is more than 100 years",
        ),
    ],
)
def test_an_interval_over_100_years_is_refused_by_every(
    make: Callable[[], Trigger], message: str
) -> None:
    with pytest.raises(InvalidSchedule) as refused:
        make()
    assert message in str(refused.value) and "next_fire" not in str(refused.value)
