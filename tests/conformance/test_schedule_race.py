"""Guarantee 4: exactly one job per schedule fire, however many schedulers run.

Schedulers here each open their own store on the test's URL, as schedulers
on separate machines would, and fire through the store's atomic
``fire_schedule``. Misfire, grace and overlap policies are checked end to end
through :class:`~rota.scheduling.scheduler.Scheduler`.
"""

from __future__ import annotations

import math
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import UTC, datetime

import pytest

from conformance.support import all_jobs, claim_one, run_threads, succeed
from conformance.support import schedule as make_schedule
from helpers import wait_for
from rota import App, at, cron, every
from rota.models import Job, JobQuery, NewJob, Schedule
from rota.scheduling import Trigger, trigger_from_json
from rota.scheduling.scheduler import Scheduler
from rota.stores import Store

SCHEDULERS = 4


def make_app(url: str) -> App:
    app = App(url)
    app.task(name="beat")(lambda n=0: n)
    return app


@pytest.fixture
def apps(url: str) -> Iterator[Callable[[], App]]:
    """A factory of apps on the test's URL, each with its own store; all closed at the end."""
    made: list[App] = []

    def factory() -> App:
        made.append(make_app(url))
        return made[-1]

    yield factory
    for app in made:
        app.close()


def stored(store: Store, name: str) -> Schedule:
    found = store.get_schedule(name)
    assert found is not None, f"no schedule {name!r}"
    return found


def jobs_of(store: Store, name: str) -> list[Job]:
    jobs = all_jobs(store, JobQuery(schedule=name))
    return sorted(jobs, key=lambda job: job.fire_time or 0.0)


def fire_times(store: Store, name: str) -> list[float]:
    return [job.fire_time for job in jobs_of(store, name) if job.fire_time is not None]


def backdate(store: Store, name: str, next_fire: float) -> None:
    """Store schedule ``name`` again as new, due at ``next_fire``: as after downtime."""
    schedule = stored(store, name)
    assert store.remove_schedule(name)
    store.upsert_schedule(replace(schedule, next_fire=next_fire))


def rewind(store: Store, name: str, to: float) -> None:
    """Make schedule ``name`` due again at ``to``, keeping its last job (overlap checks)."""
    schedule = stored(store, name)
    assert schedule.next_fire is not None
    assert store.fire_schedule(name, schedule.next_fire, to, None) == "dropped"


def expected_fires(trigger: Trigger, first: float, last: float) -> list[float]:
    """Every fire of ``trigger`` from ``first`` to ``last``, both included."""
    fires = [first]
    while (following := trigger.next_fire(fires[-1])) is not None and following <= last:
        fires.append(following)
    return fires


def assert_each_fire_once(store: Store, name: str, first: float | None = None) -> list[float]:
    """No duplicate and no gap among schedule ``name``'s jobs; returns their fire times."""
    times = [job.fire_time for job in jobs_of(store, name)]
    assert None not in times
    counted = Counter(times)
    duplicates = {t: n for t, n in counted.items() if n > 1}
    assert not duplicates, f"{name}: fires with more than one job: {duplicates}"
    fires = sorted(t for t in counted if t is not None)
    assert fires, f"{name} never fired"
    trigger = trigger_from_json(stored(store, name).trigger)
    expected = expected_fires(trigger, fires[0] if first is None else first, fires[-1])
    missing = sorted(set(expected) - set(fires))
    assert not missing, f"{name}: {len(missing)} missed fire(s), first {missing[:3]}"
    assert fires == expected
    return fires


# -- racing schedulers ----------------------------------------------------------------


def test_racing_ticks_fire_each_missed_time_once(store: Store, apps: Callable[[], App]) -> None:
    first = apps()
    first.schedule("beat", "beat", every(1), misfire="all")
    start = math.floor(store.now()) - 20
    backdate(store, "beat", start)
    schedulers = [Scheduler(apps()) for _ in range(SCHEDULERS)]
    run_threads(SCHEDULERS, lambda i: schedulers[i].tick())
    fires = assert_each_fire_once(store, "beat", first=start)
    assert len(fires) >= 21
    assert sum(s.counts["fired"] for s in schedulers) == len(fires)
    assert stored(store, "beat").next_fire == fires[-1] + 1


def test_racing_scheduler_loops_fire_every_time_once(store: Store, apps: Callable[[], App]) -> None:
    definer = apps()
    definer.schedule("tenth", "beat", every(0.1), args=(1,), misfire="all")
    definer.schedule("twentieth", "beat", every(0.05), args=(2,), misfire="all")
    definer.schedule("second", "beat", cron("* * * * * *"), args=(3,), misfire="all")
    firsts = {s.name: s.next_fire for s in store.schedules()}
    schedulers = [Scheduler(apps()) for _ in range(SCHEDULERS)]
    stop = threading.Event()
    threads = [threading.Thread(target=s.run, args=(stop,)) for s in schedulers]
    for thread in threads:
        thread.start()
    try:
        wait_for(lambda: len(jobs_of(store, "second")) >= 3, timeout=15, interval=0.1, what="3 s")
    finally:
        stop.set()
        for thread in threads:
            thread.join(10)
    assert not any(thread.is_alive() for thread in threads)
    total = 0
    for name, first in firsts.items():
        total += len(assert_each_fire_once(store, name, first=first))
    assert len(fire_times(store, "twentieth")) >= 40
    assert sum(s.counts["fired"] for s in schedulers) == total


def test_definitions_racing_from_several_apps_make_one_schedule(
    store: Store, apps: Callable[[], App]
) -> None:
    definers = [apps() for _ in range(SCHEDULERS)]
    results = run_threads(
        SCHEDULERS,
        lambda i: definers[i].schedule("shared", "beat", every(3600), args=(i,)),
    )
    [only] = store.schedules()
    assert only.name == "shared"
    assert {r.next_fire for r in results} == {only.next_fire}


def test_redefining_on_deploy_does_not_fire_again(store: Store, apps: Callable[[], App]) -> None:
    app = apps()
    app.schedule("beat", "beat", every(1), misfire="all")
    backdate(store, "beat", math.floor(store.now()) - 3)
    Scheduler(app).tick()
    fired = fire_times(store, "beat")
    app.schedule("beat", "beat", every(1), misfire="all", args=(7,))  # a deploy
    assert stored(store, "beat").next_fire == fired[-1] + 1
    Scheduler(apps()).tick()
    assert fire_times(store, "beat")[: len(fired)] == fired
    assert_each_fire_once(store, "beat")


def test_a_replayed_fire_finds_its_job_and_sends_no_other(
    store: Store, apps: Callable[[], App]
) -> None:
    app = apps()
    when = datetime.fromtimestamp(math.floor(store.now()) - 10, UTC)
    app.schedule("once", "beat", at(when))
    Scheduler(app).tick()
    assert store.remove_schedule("once")
    app.schedule("once", "beat", at(when))
    assert stored(store, "once").next_fire == when.timestamp()
    again = Scheduler(apps())
    again.tick()
    assert again.counts == {"duplicate": 1}
    assert fire_times(store, "once") == [when.timestamp()]
    assert stored(store, "once").next_fire is None


def test_a_paused_schedule_is_left_alone_by_every_scheduler(
    store: Store, apps: Callable[[], App]
) -> None:
    app = apps()
    app.schedule("beat", "beat", every(1), enabled=False)
    backdate(store, "beat", math.floor(store.now()) - 5)
    schedulers = [Scheduler(apps()) for _ in range(2)]
    assert [s.tick() for s in schedulers] == [math.inf, math.inf]
    assert jobs_of(store, "beat") == []


# -- misfires -------------------------------------------------------------------------


def test_coalesce_fires_once_for_the_latest_missed_time(
    store: Store, apps: Callable[[], App]
) -> None:
    app = apps()
    app.schedule("beat", "beat", every(1))
    before = store.now()
    backdate(store, "beat", math.floor(before) - 30)
    scheduler = Scheduler(app)
    scheduler.tick()
    after = store.now()
    [fire] = fire_times(store, "beat")
    assert math.floor(before) <= fire <= after
    assert scheduler.counts == {"dropped": 1, "fired": 1}
    schedule = stored(store, "beat")
    assert (schedule.last_fire, schedule.next_fire) == (fire, fire + 1)


def test_all_fires_every_missed_time(store: Store, apps: Callable[[], App]) -> None:
    app = apps()
    app.schedule("beat", "beat", every(1), misfire="all")
    start = math.floor(store.now()) - 6
    backdate(store, "beat", start)
    Scheduler(app).tick()
    fires = assert_each_fire_once(store, "beat", first=start)
    assert 7 <= len(fires) <= 9
    assert stored(store, "beat").last_fire == fires[-1]


def test_grace_drops_the_fires_too_old_to_matter(store: Store, apps: Callable[[], App]) -> None:
    app = apps()
    app.schedule("beat", "beat", every(1), misfire="all", grace=4.5)
    before = store.now()
    backdate(store, "beat", math.floor(before) - 30)
    Scheduler(app).tick()
    fires = assert_each_fire_once(store, "beat")
    assert fires[0] >= before - 4.5
    assert 4 <= len(fires) <= 7


def test_grace_drops_a_one_shot_that_is_too_late(store: Store, apps: Callable[[], App]) -> None:
    app = apps()
    long_ago = datetime.fromtimestamp(math.floor(store.now()) - 60, UTC)
    app.schedule("once", "beat", at(long_ago), grace=10)
    scheduler = Scheduler(app)
    assert scheduler.tick() == math.inf
    assert scheduler.counts == {"dropped": 1}
    assert jobs_of(store, "once") == []
    schedule = stored(store, "once")
    assert (schedule.next_fire, schedule.last_fire) == (None, long_ago.timestamp())


def test_a_one_shot_within_its_grace_still_fires(store: Store, apps: Callable[[], App]) -> None:
    app = apps()
    lately = datetime.fromtimestamp(math.floor(store.now()) - 2, UTC)
    app.schedule("once", "beat", at(lately), grace=60)
    Scheduler(app).tick()
    assert fire_times(store, "once") == [lately.timestamp()]


# -- overlap --------------------------------------------------------------------------


def fire_again(app: App, name: str, step: list[float]) -> str:
    """Make ``name`` due once more, at a fresh time, and tick; return what that fire did."""
    step[0] -= 0.001
    rewind(app.store, name, step[0])
    scheduler = Scheduler(app)
    scheduler.tick()
    [(result, _)] = scheduler.counts.items()
    return result


def test_overlap_allow_fires_whatever_the_last_job_does(
    store: Store, apps: Callable[[], App]
) -> None:
    app = apps()
    app.schedule("beat", "beat", every(3600), overlap="allow")
    step = [store.now() - 1]
    assert [fire_again(app, "beat", step) for _ in range(3)] == ["fired"] * 3
    assert len(jobs_of(store, "beat")) == 3


def test_overlap_skip_waits_for_the_last_job_to_finish(
    store: Store, apps: Callable[[], App]
) -> None:
    app = apps()
    app.schedule("beat", "beat", every(3600), overlap="skip")
    step = [store.now() - 1]
    assert fire_again(app, "beat", step) == "fired"
    assert fire_again(app, "beat", step) == "skipped"  # queued
    running = claim_one(store)
    assert running.schedule == "beat"
    assert fire_again(app, "beat", step) == "skipped"  # running
    assert succeed(store, running)
    assert fire_again(app, "beat", step) == "fired"
    assert len(jobs_of(store, "beat")) == 2
    assert stored(store, "beat").skipped == 2


def test_overlap_queue_lets_one_job_wait_behind_the_running_one(
    store: Store, apps: Callable[[], App]
) -> None:
    app = apps()
    app.schedule("beat", "beat", every(3600), overlap="queue")
    step = [store.now() - 1]
    assert fire_again(app, "beat", step) == "fired"
    assert fire_again(app, "beat", step) == "skipped"  # one is waiting already
    running = claim_one(store)
    assert fire_again(app, "beat", step) == "fired"  # waits behind the running one
    assert fire_again(app, "beat", step) == "skipped"
    assert store.claim("w", ["default"], 10) == []  # it does not start beside it
    assert succeed(store, running)
    waiting = claim_one(store)  # and starts once the running one has ended
    assert waiting.schedule == "beat" and waiting.id != running.id
    assert succeed(store, waiting)
    assert len(jobs_of(store, "beat")) == 2
    assert stored(store, "beat").skipped == 2


def test_a_paused_schedule_does_not_fire(store: Store) -> None:
    """A pause that lands between a scheduler's read and its fire wins."""
    now = store.now()
    store.upsert_schedule(make_schedule("paused-race", next_fire=now - 1))
    assert store.set_schedule_enabled("paused-race", False)
    job = NewJob(
        id="paused-race-job",
        task="t",
        queue="default",
        payload=b'{"args": []}',
        schedule="paused-race",
        fire_time=now - 1,
    )
    assert store.fire_schedule("paused-race", now - 1, now + 60, job) == "conflict"
    assert store.get_job("paused-race-job") is None
