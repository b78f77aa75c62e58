"""Guarantee 4 at the store level: schedules live in the store and each fire happens once."""

from __future__ import annotations

from typing import Any

import pytest

from conformance.support import (
    all_jobs,
    claim_one,
    get,
    new_job,
    open_stores,
    payload,
    run_threads,
    schedule,
    succeed,
)
from rota.errors import InvalidArgument
from rota.models import JobQuery, JobState, NewJob, Schedule
from rota.stores import Store

T0 = 1_700_000_000.0


def stored(store: Store, name: str) -> Schedule:
    found = {s.name: s for s in store.schedules()}
    assert name in found, f"no schedule {name!r}: {sorted(found)}"
    return found[name]


def fire_job(name: str, fire_time: float, **fields: Any) -> NewJob:
    return new_job(task="report", schedule=name, fire_time=fire_time, **fields)


def scheduled_jobs(store: Store, name: str) -> list[str]:
    return [j.id for j in all_jobs(store, JobQuery(schedule=name))]


def test_upsert_creates_a_schedule(store: Store) -> None:
    assert store.schedules() == []
    store.upsert_schedule(
        schedule(
            "nightly",
            T0,
            task="report",
            trigger={"type": "cron", "expr": "0 3 * * *", "tz": "UTC"},
            misfire="all",
            grace=30.0,
            overlap="skip",
            jitter=2.5,
            job_options={"queue": "reports", "priority": 3},
        )
    )
    found = stored(store, "nightly")
    assert found.task == "report"
    assert found.trigger == {"type": "cron", "expr": "0 3 * * *", "tz": "UTC"}
    assert found.payload == payload()
    assert found.next_fire == T0
    assert found.enabled
    assert (found.misfire, found.grace, found.overlap, found.jitter) == ("all", 30.0, "skip", 2.5)
    assert found.job_options == {"queue": "reports", "priority": 3}
    assert (found.last_fire, found.last_job_id, found.skipped) == (None, None, 0)


def test_schedules_are_listed_by_name(store: Store) -> None:
    for name in ("b", "c", "a"):
        store.upsert_schedule(schedule(name))
    assert [s.name for s in store.schedules()] == ["a", "b", "c"]


def test_get_schedule_finds_one_by_its_exact_name(store: Store) -> None:
    for name in ("night", "nightly", "nightly:eu", "reports/Ünï"):
        store.upsert_schedule(schedule(name, T0, task=f"task-{name}"))
    for name in ("night", "nightly", "nightly:eu", "reports/Ünï"):
        found = store.get_schedule(name)
        assert found == stored(store, name)
        assert found is not None and found.task == f"task-{name}"
    assert store.get_schedule("nightly:") is None
    assert store.get_schedule("ghost") is None


def test_get_schedule_shows_fires_pauses_and_removal(store: Store) -> None:
    store.upsert_schedule(schedule("s", T0, overlap="skip"))
    job = fire_job("s", T0)
    assert store.fire_schedule("s", T0, T0 + 1, job) == "fired"
    assert store.fire_schedule("s", T0 + 1, T0 + 2, fire_job("s", T0 + 1)) == "skipped"
    assert store.set_schedule_enabled("s", False)
    found = store.get_schedule("s")
    assert found == stored(store, "s")
    assert found is not None
    assert (found.next_fire, found.last_fire, found.last_job_id) == (T0 + 2, T0 + 1, job.id)
    assert (found.skipped, found.enabled) == (1, False)
    assert store.remove_schedule("s")
    assert store.get_schedule("s") is None


def test_get_schedule_refuses_an_empty_name(store: Store) -> None:
    with pytest.raises(InvalidArgument):
        store.get_schedule("")


def test_update_with_the_same_trigger_keeps_next_fire(store: Store) -> None:
    store.upsert_schedule(schedule("s", T0))
    assert store.fire_schedule("s", T0, T0 + 1, fire_job("s", T0)) == "fired"
    store.set_schedule_enabled("s", False)

    store.upsert_schedule(schedule("s", T0 + 500, task="report-v2", job_options={"queue": "q"}))
    found = stored(store, "s")
    assert found.next_fire == T0 + 1
    assert found.last_fire == T0
    assert not found.enabled
    assert found.task == "report-v2"
    assert found.job_options == {"queue": "q"}


def test_update_with_a_new_trigger_takes_its_next_fire(store: Store) -> None:
    store.upsert_schedule(schedule("s", T0))
    store.upsert_schedule(schedule("s", T0 + 60, trigger={"type": "every", "seconds": 60}))
    found = stored(store, "s")
    assert found.trigger == {"type": "every", "seconds": 60}
    assert found.next_fire == T0 + 60
    assert len(store.schedules()) == 1


def test_fire_enqueues_the_job_and_advances(store: Store) -> None:
    store.upsert_schedule(schedule("s", T0))
    job = fire_job("s", T0)
    assert store.fire_schedule("s", T0, T0 + 1, job) == "fired"

    found = stored(store, "s")
    assert (found.next_fire, found.last_fire, found.last_job_id) == (T0 + 1, T0, job.id)
    enqueued = get(store, job.id)
    assert (enqueued.schedule, enqueued.fire_time) == ("s", T0)
    assert enqueued.state is JobState.QUEUED
    assert scheduled_jobs(store, "s") == [job.id]
    claimed = claim_one(store)
    assert (claimed.id, claimed.schedule, claimed.fire_time) == (job.id, "s", T0)


def test_a_second_fire_of_the_same_time_conflicts(store: Store) -> None:
    store.upsert_schedule(schedule("s", T0))
    first = fire_job("s", T0)
    assert store.fire_schedule("s", T0, T0 + 1, first) == "fired"
    assert store.fire_schedule("s", T0, T0 + 1, fire_job("s", T0)) == "conflict"
    assert scheduled_jobs(store, "s") == [first.id]
    found = stored(store, "s")
    assert (found.next_fire, found.last_job_id) == (T0 + 1, first.id)


def test_fires_follow_each_other(store: Store) -> None:
    store.upsert_schedule(schedule("s", T0))
    fired = []
    for n in range(3):
        job = fire_job("s", T0 + n)
        assert store.fire_schedule("s", T0 + n, T0 + n + 1, job) == "fired"
        fired.append(job.id)
    assert sorted(scheduled_jobs(store, "s")) == sorted(fired)
    assert stored(store, "s").next_fire == T0 + 3


def test_last_fire_ends_the_schedule(store: Store) -> None:
    store.upsert_schedule(schedule("once", T0, trigger={"type": "date", "at": T0}))
    assert store.fire_schedule("once", T0, None, fire_job("once", T0)) == "fired"
    assert stored(store, "once").next_fire is None


def test_fire_of_an_unknown_schedule_conflicts(store: Store) -> None:
    assert store.fire_schedule("ghost", T0, T0 + 1, fire_job("ghost", T0)) == "conflict"
    assert all_jobs(store) == []


def test_racing_schedulers_fire_once(url: str) -> None:
    threads = 8
    with open_stores(url, threads) as stores:
        stores[0].upsert_schedule(schedule("race", T0))
        jobs = [fire_job("race", T0) for _ in range(threads)]

        def fire(index: int) -> str:
            return stores[index].fire_schedule("race", T0, T0 + 1, jobs[index])

        results = run_threads(threads, fire)
        assert sorted(results) == ["conflict"] * (threads - 1) + ["fired"]
        winner = jobs[results.index("fired")]
        assert scheduled_jobs(stores[0], "race") == [winner.id]
        assert stored(stores[0], "race").last_job_id == winner.id


def test_racing_schedulers_over_many_fires(url: str) -> None:
    threads, fires = 4, 10
    with open_stores(url, threads) as stores:
        stores[0].upsert_schedule(schedule("race", T0))

        def scheduler(index: int) -> list[float]:
            store, won = stores[index], []
            for n in range(fires):
                job = fire_job("race", T0 + n)
                if store.fire_schedule("race", T0 + n, T0 + n + 1, job) == "fired":
                    won.append(T0 + n)
            return won

        won = sorted(t for part in run_threads(threads, scheduler) for t in part)
        assert won == [T0 + n for n in range(fires)]
        times = sorted(j.fire_time or 0.0 for j in all_jobs(stores[0], JobQuery(schedule="race")))
        assert times == won


def test_overlap_skip_while_the_last_job_is_pending_or_running(store: Store) -> None:
    store.upsert_schedule(schedule("s", T0, overlap="skip"))
    first = fire_job("s", T0, lease=30.0)
    assert store.fire_schedule("s", T0, T0 + 1, first) == "fired"

    assert store.fire_schedule("s", T0 + 1, T0 + 2, fire_job("s", T0 + 1)) == "skipped"
    found = stored(store, "s")
    assert (found.next_fire, found.last_fire, found.skipped) == (T0 + 2, T0 + 1, 1)
    assert found.last_job_id == first.id

    claimed = claim_one(store)
    assert store.fire_schedule("s", T0 + 2, T0 + 3, fire_job("s", T0 + 2)) == "skipped"
    assert stored(store, "s").skipped == 2
    assert scheduled_jobs(store, "s") == [first.id]

    assert succeed(store, claimed)
    second = fire_job("s", T0 + 3)
    assert store.fire_schedule("s", T0 + 3, T0 + 4, second) == "fired"
    assert sorted(scheduled_jobs(store, "s")) == sorted([first.id, second.id])
    assert stored(store, "s").last_job_id == second.id


def test_a_run_now_is_the_last_job_the_next_fires_overlap_rule_sees(store: Store) -> None:
    store.upsert_schedule(schedule("s", T0, overlap="skip"))
    now = fire_job("s", T0 - 5, lease=30.0)
    result = store.run_schedule("s", now)
    assert result is not None and (result.id, result.duplicate) == (now.id, False)
    found = stored(store, "s")
    assert (found.last_job_id, found.next_fire, found.last_fire) == (now.id, T0, None)

    # the fire due while the run-now job is pending, then running, is skipped
    assert store.fire_schedule("s", T0, T0 + 1, fire_job("s", T0)) == "skipped"
    claimed = claim_one(store)
    assert store.fire_schedule("s", T0 + 1, T0 + 2, fire_job("s", T0 + 1)) == "skipped"
    assert succeed(store, claimed)
    assert store.fire_schedule("s", T0 + 2, T0 + 3, fire_job("s", T0 + 2)) == "fired"

    # a run now is what the operator asked for: the rule does not hold it back
    again = fire_job("s", T0 + 2.5)
    assert store.run_schedule("s", again) is not None
    assert stored(store, "s").last_job_id == again.id
    assert len(scheduled_jobs(store, "s")) == 3


def test_a_run_now_of_a_schedule_that_is_gone_enqueues_nothing(store: Store) -> None:
    assert store.run_schedule("nothing", fire_job("nothing", T0)) is None
    assert all_jobs(store) == []
    store.upsert_schedule(schedule("s", T0))
    taken = fire_job("s", T0)
    assert store.run_schedule("s", taken) is not None
    with pytest.raises(InvalidArgument):
        store.run_schedule("s", taken)  # its id is taken: refused, nothing changed
    assert scheduled_jobs(store, "s") == [taken.id]
    with pytest.raises(InvalidArgument):
        store.run_schedule("", fire_job("", T0))


def test_overlap_queue_lets_one_job_wait_behind_a_running_one(store: Store) -> None:
    store.upsert_schedule(schedule("s", T0, overlap="queue"))
    first = fire_job("s", T0, lease=30.0)
    assert store.fire_schedule("s", T0, T0 + 1, first) == "fired"
    assert store.fire_schedule("s", T0 + 1, T0 + 2, fire_job("s", T0 + 1)) == "skipped"

    claimed = claim_one(store)
    waiting = fire_job("s", T0 + 2)
    assert store.fire_schedule("s", T0 + 2, T0 + 3, waiting) == "fired"
    assert store.fire_schedule("s", T0 + 3, T0 + 4, fire_job("s", T0 + 3)) == "skipped"
    assert sorted(scheduled_jobs(store, "s")) == sorted([first.id, waiting.id])
    assert stored(store, "s").skipped == 2
    assert succeed(store, claimed)


def test_overlap_allow_fires_while_the_last_job_is_pending(store: Store) -> None:
    store.upsert_schedule(schedule("s", T0, overlap="allow"))
    assert store.fire_schedule("s", T0, T0 + 1, fire_job("s", T0)) == "fired"
    assert store.fire_schedule("s", T0 + 1, T0 + 2, fire_job("s", T0 + 1)) == "fired"
    assert len(scheduled_jobs(store, "s")) == 2


def test_fire_without_a_job_is_dropped(store: Store) -> None:
    store.upsert_schedule(schedule("s", T0))
    assert store.fire_schedule("s", T0, T0 + 1, None) == "dropped"
    found = stored(store, "s")
    assert (found.next_fire, found.last_fire, found.last_job_id) == (T0 + 1, T0, None)
    assert all_jobs(store) == []
    assert store.fire_schedule("s", T0, T0 + 1, None) == "conflict"


def test_enable_and_disable(store: Store) -> None:
    store.upsert_schedule(schedule("s", T0))
    assert store.set_schedule_enabled("s", False) is True
    assert not stored(store, "s").enabled
    assert store.set_schedule_enabled("s", True) is True
    assert stored(store, "s").enabled
    assert stored(store, "s").next_fire == T0
    assert store.set_schedule_enabled("ghost", False) is False


def test_remove(store: Store) -> None:
    store.upsert_schedule(schedule("s", T0))
    store.upsert_schedule(schedule("kept", T0))
    assert store.remove_schedule("s") is True
    assert store.remove_schedule("s") is False
    assert [s.name for s in store.schedules()] == ["kept"]
    assert store.fire_schedule("s", T0, T0 + 1, fire_job("s", T0)) == "conflict"


def test_removing_a_schedule_keeps_its_jobs(store: Store) -> None:
    store.upsert_schedule(schedule("s", T0))
    job = fire_job("s", T0)
    assert store.fire_schedule("s", T0, T0 + 1, job) == "fired"
    assert store.remove_schedule("s")
    assert get(store, job.id).state is JobState.QUEUED


def test_change_counter_moves_on_every_change(store: Store) -> None:
    seen = [store.schedule_changed_since(0)]

    def changed() -> None:
        value = store.schedule_changed_since(seen[-1])
        assert value != seen[-1]
        seen.append(value)

    store.upsert_schedule(schedule("s", T0))
    changed()
    store.upsert_schedule(schedule("s", T0, task="other"))
    changed()
    store.upsert_schedule(schedule("s", T0, trigger={"type": "every", "seconds": 5}))
    changed()
    store.set_schedule_enabled("s", False)
    changed()
    store.set_schedule_enabled("s", True)
    changed()
    store.remove_schedule("s")
    changed()
    assert store.schedule_changed_since(seen[-1]) == seen[-1]  # no change, same value


def test_change_counter_is_shared_by_store_instances(url: str) -> None:
    with open_stores(url, 2) as (a, b):
        before = b.schedule_changed_since(0)
        a.upsert_schedule(schedule("s", T0))
        assert b.schedule_changed_since(before) != before
