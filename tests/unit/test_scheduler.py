"""Scheduler.tick and Scheduler.run against a real SQLite store."""

from __future__ import annotations

import itertools
import logging
import math
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from helpers import wait_for
from rota import App, InvalidArgument, at, every
from rota.errors import CommitInDoubt, StoreUnavailable
from rota.models import Job, JobQuery, JobState, Schedule
from rota.scheduling import jitter_offset
from rota.scheduling.scheduler import Scheduler, fire_job_id


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'rota.db'}"


@pytest.fixture
def app(url: str) -> Iterator[App]:
    app = App(url)

    @app.task(name="refresh", queue="pages", priority=2, retries=1)
    def refresh(site: str) -> None:
        """Refresh one site."""

    yield app
    app.close()


def stored(app: App, name: str) -> Schedule:
    found = app.store.get_schedule(name)
    assert found is not None, f"no schedule {name!r}"
    return found


def backdate(app: App, name: str, next_fire: float) -> Schedule:
    """Store schedule ``name`` again as new, due at ``next_fire`` (as after downtime)."""
    schedule = stored(app, name)
    assert app.store.remove_schedule(name)
    app.store.upsert_schedule(replace(schedule, next_fire=next_fire))
    return stored(app, name)


def moment(epoch: float) -> tuple[datetime, float]:
    """A datetime for ``at()`` near ``epoch``, and the exact epoch it stands for."""
    when = datetime.fromtimestamp(epoch, UTC)
    return when, when.timestamp()


def half_an_hour_ago(app: App) -> datetime:
    """A start for every(3600) whose fires fall half an hour from now: one
    anchored at the epoch fires on the hour, which a test due a second ago
    straddles when it runs just after one."""
    return datetime.fromtimestamp(app.store.now() - 1800, UTC)


def jobs_of(app: App, name: str) -> list[Job]:
    jobs = app.store.list_jobs(JobQuery(schedule=name), limit=1000).jobs
    return sorted(jobs, key=lambda job: job.fire_time or 0.0)


def fire_times(app: App, name: str) -> list[float]:
    return [job.fire_time for job in jobs_of(app, name) if job.fire_time is not None]


# -- tick -----------------------------------------------------------------------


def test_tick_without_schedules_has_nothing_to_wait_for(app: App) -> None:
    assert Scheduler(app).tick() == math.inf


def test_tick_returns_the_time_until_the_next_fire(app: App) -> None:
    schedule = app.schedule("r", "refresh", every(3600), args=("a",))
    assert schedule.next_fire is not None
    now = app.store.now()
    wait = Scheduler(app).tick()
    assert schedule.next_fire - now - 0.5 <= wait <= schedule.next_fire - now
    assert jobs_of(app, "r") == []


def test_a_due_fire_enqueues_one_job_built_from_the_schedule(app: App) -> None:
    app.schedule("r", "refresh", every(3600), args=("home",))
    now = app.store.now()
    fire = math.floor(now / 3600) * 3600  # the last fire of every(3600)
    backdate(app, "r", fire)
    scheduler = Scheduler(app)
    wait = scheduler.tick()
    assert fire + 3600 - now - 1 <= wait <= fire + 3600 - now
    [job] = jobs_of(app, "r")
    assert job.id == fire_job_id("r", fire)
    assert (job.task, job.queue, job.priority, job.max_attempts) == ("refresh", "pages", 2, 2)
    assert (job.schedule, job.fire_time, job.run_at) == ("r", fire, fire)
    assert (job.args, job.kwargs, job.state) == (["home"], {}, JobState.QUEUED)
    after = stored(app, "r")
    assert (after.next_fire, after.last_fire, after.last_job_id) == (fire + 3600, fire, job.id)
    assert scheduler.counts == {"fired": 1}
    scheduler.tick()
    assert len(jobs_of(app, "r")) == 1


def test_job_ids_are_the_same_on_every_machine() -> None:
    assert fire_job_id("r", 1_700_000_000.0) == fire_job_id("r", 1_700_000_000)
    assert fire_job_id("r", 1_700_000_000.0) != fire_job_id("r", 1_700_000_000.1)
    assert fire_job_id("r", 1.0) != fire_job_id("s", 1.0)
    assert len(fire_job_id("r", 1.0)) == 32


def test_jitter_delays_the_job_by_the_stable_offset(app: App) -> None:
    app.schedule("r", "refresh", every(3600), args=("a",), jitter=600)
    fire = math.floor(app.store.now() / 3600) * 3600 + 3600.0  # in the future: run_at stays
    backdate(app, "r", fire - 3600)
    Scheduler(app).tick()
    [job] = jobs_of(app, "r")
    offset = jitter_offset("r", fire - 3600, 600)
    assert 0 < offset < 600
    assert job.run_at == pytest.approx(fire - 3600 + offset)


def test_a_paused_schedule_does_not_fire_and_coalesces_on_resume(app: App) -> None:
    app.schedule("r", "refresh", every(1), args=("a",))
    now = app.store.now()
    backdate(app, "r", math.floor(now) - 30)
    app.store.set_schedule_enabled("r", False)
    scheduler = Scheduler(app)
    assert scheduler.tick() == math.inf
    assert jobs_of(app, "r") == []
    app.store.set_schedule_enabled("r", True)
    scheduler.tick()
    [job] = jobs_of(app, "r")
    assert job.fire_time is not None
    assert now - 1 <= job.fire_time <= app.store.now()


def test_a_stale_scheduler_sees_a_conflict_and_makes_no_second_job(app: App, url: str) -> None:
    other = App(url)
    instant, when = moment(app.store.now() + 0.3)
    app.schedule("once", "refresh", at(instant), args=("a",))
    late = Scheduler(other)
    assert late.tick() > 0  # loads the schedule before it is due
    wait_for(lambda: app.store.now() >= when, timeout=5, what="the fire time")
    first = Scheduler(app)
    first.tick()
    late.tick()
    assert first.counts == {"fired": 1}
    assert late.counts == {"conflict": 1}
    assert [job.id for job in jobs_of(app, "once")] == [fire_job_id("once", when)]
    assert stored(app, "once").next_fire is None
    assert late.tick() == math.inf
    other.close()


def test_a_fire_replayed_after_redefinition_is_not_sent_twice(app: App) -> None:
    when, _ = moment(app.store.now() - 5)
    app.schedule("once", "refresh", at(when), args=("a",))
    scheduler = Scheduler(app)
    scheduler.tick()
    assert app.store.remove_schedule("once")
    app.schedule("once", "refresh", at(when), args=("a",))  # due again: at() in the past
    scheduler.tick()
    assert scheduler.counts == {"fired": 1, "duplicate": 1}
    assert len(jobs_of(app, "once")) == 1
    assert stored(app, "once").next_fire is None


def test_misfire_all_fires_every_missed_time_in_order(app: App) -> None:
    app.schedule("r", "refresh", every(1), args=("a",), misfire="all")
    now = app.store.now()
    start = math.floor(now) - 5
    backdate(app, "r", start)
    scheduler = Scheduler(app, max_catchup=100)
    scheduler.tick()
    times = fire_times(app, "r")
    assert times[:6] == [start + k for k in range(6)]
    assert times == [start + k for k in range(len(times))]
    assert stored(app, "r").last_fire == times[-1]


def test_catch_up_is_capped_and_the_rest_dropped(app: App) -> None:
    app.schedule("r", "refresh", every(1), args=("a",), misfire="all")
    now = math.floor(app.store.now())
    backdate(app, "r", now - 50)
    scheduler = Scheduler(app, max_catchup=3)
    scheduler.tick()
    times = fire_times(app, "r")
    assert len(times) == 3
    assert times == [times[0], times[0] + 1, times[0] + 2]
    assert times[0] >= now - 2
    assert scheduler.counts["dropped"] == 1
    assert scheduler.counts["fired"] == 3


def test_a_broken_schedule_is_skipped_and_the_others_still_fire(
    app: App, caplog: pytest.LogCaptureFixture
) -> None:
    app.schedule("good", "refresh", every(3600, start=half_an_hour_ago(app)), args=("a",))
    backdate(app, "good", app.store.now() - 1)
    broken = replace(stored(app, "good"), name="broken", trigger={"type": "lunar"})
    app.store.upsert_schedule(broken)
    with caplog.at_level(logging.ERROR, logger="rota.scheduler"):
        wait = Scheduler(app).tick()
    assert len(jobs_of(app, "good")) == 1
    assert jobs_of(app, "broken") == []
    assert wait > 1  # the broken one, due since a second ago, does not keep it awake
    assert "schedule broken cannot be fired" in caplog.text
    assert "unknown trigger type 'lunar'" in caplog.text


def test_a_broken_schedule_is_logged_once_and_retried_when_redefined(
    app: App, caplog: pytest.LogCaptureFixture
) -> None:
    app.schedule("good", "refresh", every(3600, start=half_an_hour_ago(app)), args=("a",))
    due = app.store.now() - 1
    bad_options = replace(stored(app, "good"), name="bad", next_fire=due)
    app.store.upsert_schedule(replace(bad_options, job_options={"priority": "high"}))
    scheduler = Scheduler(app)
    with caplog.at_level(logging.ERROR, logger="rota.scheduler"):
        scheduler.tick()
        app.schedule("other", "refresh", every(3600), args=("b",))  # schedules change
        scheduler.tick()
    assert caplog.text.count("schedule bad cannot be fired") == 1
    assert jobs_of(app, "bad") == []
    app.store.upsert_schedule(bad_options)  # fixed by a redefinition
    scheduler.tick()
    [job] = jobs_of(app, "bad")
    assert job.fire_time == due


def test_options_are_checked() -> None:
    app = App("sqlite:///unused.db")
    with pytest.raises(InvalidArgument, match="max_sleep must be a positive number"):
        Scheduler(app, max_sleep=0)
    with pytest.raises(InvalidArgument, match="max_catchup must be an integer >= 1"):
        Scheduler(app, max_catchup=0)


# -- run ------------------------------------------------------------------------


class Running:
    """A Scheduler.run loop on a thread, stopped and joined by the test."""

    def __init__(self, app: App, **options: float) -> None:
        self.scheduler = Scheduler(app, **options)  # type: ignore[arg-type]
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.scheduler.run, args=(self.stop,))
        self.thread.start()

    def close(self) -> float:
        started = time.monotonic()
        self.stop.set()
        self.thread.join(5)
        assert not self.thread.is_alive(), "the scheduler did not stop"
        return time.monotonic() - started


def test_run_fires_on_time_and_stops_at_once(app: App) -> None:
    app.schedule("fast", "refresh", every(0.1), args=("a",), misfire="all")
    running = Running(app)
    try:
        wait_for(lambda: len(jobs_of(app, "fast")) >= 5, timeout=10, what="five fires")
    finally:
        took = running.close()
    assert took < 1.0
    jobs = jobs_of(app, "fast")
    times = [job.fire_time or 0.0 for job in jobs]
    assert all(b - a == pytest.approx(0.1, abs=1e-5) for a, b in itertools.pairwise(times))
    lateness = sorted(job.enqueued_at - (job.fire_time or 0.0) for job in jobs)
    assert lateness[0] >= 0
    assert lateness[len(lateness) // 2] < 0.1  # on an idle machine: a few milliseconds


def test_run_notices_a_new_schedule_while_asleep(app: App) -> None:
    app.schedule("far", "refresh", every(86400), args=("a",))
    running = Running(app, max_sleep=0.2)
    try:
        time.sleep(0.1)  # let it fall asleep until tomorrow
        instant, when = moment(app.store.now() + 0.3)
        app.schedule("soon", "refresh", at(instant), args=("b",))
        [job] = wait_for(lambda: jobs_of(app, "soon"), timeout=5, what="the new schedule's job")
    finally:
        running.close()
    assert job.fire_time == when
    assert job.enqueued_at - when < 0.3


def test_run_outlives_store_errors_and_still_stops(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    app = App(f"sqlite:///{tmp_path / 'missing' / 'rota.db'}")  # the directory does not exist
    with caplog.at_level(logging.ERROR, logger="rota.scheduler"):
        running = Running(app)
        wait_for(lambda: "scheduler tick failed" in caplog.text, timeout=5, what="a logged error")
        assert running.thread.is_alive()
        assert running.close() < 1.0


@pytest.mark.parametrize("outage", [CommitInDoubt, StoreUnavailable])
def test_an_outage_is_logged_as_a_warning_without_a_traceback(
    app: App,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
    outage: type[StoreUnavailable],
) -> None:
    """A store server's crash (a commit in doubt) or one that cannot be
    reached is expected: one line in the store's words, no traceback."""
    calls: list[int] = []
    read_version = app.store.schedule_changed_since

    def cut_off_once(version: int) -> int:
        calls.append(version)
        if len(calls) == 1:
            raise outage("the connection was lost while the store committed")
        return read_version(version)

    monkeypatch.setattr(app.store, "schedule_changed_since", cut_off_once)
    with caplog.at_level(logging.INFO, logger="rota.scheduler"):
        running = Running(app)
        try:
            wait_for(lambda: len(calls) > 2, timeout=5, what="the ticks after the failed one")
        finally:
            running.close()
    [failed] = [r for r in caplog.records if "tick failed" in r.getMessage()]
    assert failed.levelno == logging.WARNING
    assert failed.exc_info is None
    assert "lost while the store committed" in failed.getMessage()


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="milliseconds")


def test_the_log_of_dropped_fires_names_what_was_dropped_and_what_was_sent(
    app: App, caplog: pytest.LogCaptureFixture
) -> None:
    now = math.floor(app.store.now())
    start = now - 630  # fires at now - 630, ..., now - 30, now + 30
    app.schedule("r", "refresh", every(60, start=moment(start)[0]), args=("a",))
    backdate(app, "r", start + 360)  # now - 270: five due fires, four dropped
    with caplog.at_level(logging.INFO, logger="rota.scheduler"):
        Scheduler(app).tick()
    assert fire_times(app, "r") == [now - 30]
    assert (
        f"schedule r: dropped 4 missed fire(s), the first at {_iso(now - 270)}; "
        f"coalesced into the fire at {_iso(now - 30)}"
    ) in caplog.text


def test_the_log_of_fires_older_than_the_grace_names_the_next_fire(
    app: App, caplog: pytest.LogCaptureFixture
) -> None:
    now = math.floor(app.store.now())
    start = now - 9000  # fires at now - 9000, - 5400, - 1800, now + 1800
    app.schedule("g", "refresh", every(3600, start=moment(start)[0]), args=("a",), grace=60)
    backdate(app, "g", start + 3600)
    with caplog.at_level(logging.INFO, logger="rota.scheduler"):
        Scheduler(app).tick()
    assert fire_times(app, "g") == []
    assert stored(app, "g").next_fire == now + 1800
    assert (
        f"schedule g: dropped 2 missed fire(s), the first at {_iso(now - 5400)}, "
        f"all older than its grace; next fire: {_iso(now + 1800)}"
    ) in caplog.text


@pytest.mark.parametrize(
    ("overlap", "why"),
    [
        ("skip", "its previous job has not finished (overlap='skip')"),
        ("queue", "a job it sent still waits to run, and overlap='queue' lets only one wait"),
    ],
)
def test_a_fire_skipped_for_overlap_is_logged_with_its_time_and_rule(
    app: App, caplog: pytest.LogCaptureFixture, overlap: str, why: str
) -> None:
    now = math.floor(app.store.now())
    start = now - 90  # fires at now - 90, now - 30, now + 30
    app.schedule(
        "o",
        "refresh",
        every(60, start=moment(start)[0]),
        args=("a",),
        overlap=overlap,
        misfire="all",
    )
    backdate(app, "o", now - 90)
    with caplog.at_level(logging.INFO, logger="rota.scheduler"):
        Scheduler(app).tick()
    # queued, not finished (and waiting): the next fire is skipped
    assert fire_times(app, "o") == [now - 90]
    assert f"schedule o: the fire at {_iso(now - 30)} skipped: {why}" in caplog.text
    assert caplog.text.count("overlap=") == 1  # its own rule only


def test_the_log_of_fires_dropped_under_misfire_all_says_why_and_what_fires(
    app: App, caplog: pytest.LogCaptureFixture
) -> None:
    now = math.floor(app.store.now())
    start = now - 630  # fires at now - 630, ..., now - 30, now + 30

    def define(name: str, grace: float | None) -> None:
        app.schedule(
            name,
            "refresh",
            every(60, start=moment(start)[0]),
            args=("a",),
            misfire="all",
            grace=grace,
        )
        backdate(app, name, now - 270)  # due: now - 270, - 210, - 150, - 90, - 30

    define("late", 100)  # three older than the grace
    define("many", None)  # three over the catch-up limit of 2
    define("both", 200)  # two older than the grace, then one over the limit
    with caplog.at_level(logging.INFO, logger="rota.scheduler"):
        Scheduler(app, max_catchup=2).tick()
    for name in ("late", "many", "both"):
        assert fire_times(app, name) == [now - 90, now - 30]
    first = _iso(now - 270)
    then = (
        "the 2 due fire(s) after them fire one by one (misfire='all'), "
        f"the first at {_iso(now - 90)}"
    )
    assert (
        f"schedule late: dropped 3 missed fire(s), the first at {first} "
        f"(older than its grace); {then}"
    ) in caplog.text
    assert (
        f"schedule many: dropped 3 missed fire(s), the first at {first} "
        f"(over the catch-up limit of 2); {then}"
    ) in caplog.text
    assert (
        f"schedule both: dropped 3 missed fire(s), the first at {first} "
        f"(2 older than its grace, 1 over the catch-up limit of 2); {then}"
    ) in caplog.text
    assert "coalesced" not in caplog.text


def test_fires_dropped_without_their_work_running_are_logged_as_warnings(
    app: App, caplog: pytest.LogCaptureFixture
) -> None:
    """A nightly fire dropped for its age ran no job: a warning. Fires
    coalesced into one that is sent are logged at info level."""
    now = math.floor(app.store.now())
    start = now - 630  # fires at now - 630, ..., now - 30, now + 30
    for name, misfire, grace in (
        ("old", "coalesce", 1),
        ("some", "all", 100),
        ("one", "coalesce", None),
    ):
        app.schedule(
            name,
            "refresh",
            every(60, start=moment(start)[0]),
            args=("a",),
            misfire=misfire,
            grace=grace,
        )
        backdate(app, name, now - 270)
    with caplog.at_level(logging.INFO, logger="rota.scheduler"):
        Scheduler(app).tick()
    levels = {
        record.getMessage().split(":")[0]: record.levelno
        for record in caplog.records
        if "dropped" in record.getMessage()
    }
    assert levels == {
        "schedule old": logging.WARNING,  # all five older than the grace: no job
        "schedule some": logging.WARNING,  # three older than the grace, then two jobs
        "schedule one": logging.INFO,  # coalesced into the fire at now - 30
    }
    assert fire_times(app, "old") == []
    assert fire_times(app, "one") == [now - 30]
