"""The read-only inspection verbs the dashboard and CLI use, and retention."""

from __future__ import annotations

import pytest

from conformance.support import (
    all_jobs,
    claim,
    claim_one,
    enqueue_one,
    fail,
    get,
    job_ids,
    new_job,
    succeed,
    wait_until,
    worker_info,
)
from rota import InvalidArgument
from rota.models import ConcurrencyKey, JobQuery, JobState, MinuteStats
from rota.stores import Store


def test_list_jobs_filters(store: Store) -> None:
    needle = enqueue_one(store, new_job("https://example.com/needle", task="fetch", queue="a"))
    parse = enqueue_one(store, new_job("other", task="parse", queue="a"))
    fired = enqueue_one(
        store, new_job("x", task="fetch", queue="b", schedule="nightly", fire_time=1_000.0)
    )
    done = enqueue_one(store, new_job("y", task="fetch", queue="c", lease=30.0))
    assert succeed(store, claim_one(store, "c"))

    assert job_ids(store, JobQuery(queue="a")) == {needle, parse}
    assert job_ids(store, JobQuery(task="fetch")) == {needle, fired, done}
    assert job_ids(store, JobQuery(state=JobState.SUCCEEDED)) == {done}
    assert job_ids(store, JobQuery(state=JobState.QUEUED)) == {needle, parse, fired}
    assert job_ids(store, JobQuery(state=JobState.RUNNING)) == set()
    assert job_ids(store, JobQuery(schedule="nightly")) == {fired}
    assert job_ids(store, JobQuery(search="needle")) == {needle}
    assert job_ids(store, JobQuery(search="example.com")) == {needle}
    assert job_ids(store, JobQuery(queue="b", task="fetch", state=JobState.QUEUED)) == {fired}
    assert job_ids(store, JobQuery(queue="a", task="fetch", search="nothing-like-it")) == set()
    assert job_ids(store, JobQuery(queue="nowhere")) == set()
    assert job_ids(store) == {needle, parse, fired, done}


def test_a_name_filter_with_a_nul_finds_nothing(store: Store) -> None:
    enqueue_one(store, new_job(1, task="fetch", queue="a", schedule="nightly", fire_time=1.0))
    for query in (
        JobQuery(queue="a\0"),
        JobQuery(task="fetch\0x"),
        JobQuery(schedule="\0nightly"),
        JobQuery(queue="a\0", state=JobState.QUEUED),
    ):
        assert store.list_jobs(query).jobs == ()
    assert list(store.iter_results(queue="a\0", task="fetch\0")) == []
    assert store.get_jobs(["\0", "x\0y"]) == [None, None]
    assert store.get_schedule("nightly\0") is None


def test_list_jobs_state_filter_follows_run_time(store: Store) -> None:
    later = enqueue_one(store, new_job(delay=60.0))
    soon = enqueue_one(store, new_job(delay=0.2))
    assert job_ids(store, JobQuery(state=JobState.SCHEDULED)) == {later, soon}
    wait_until(store, get(store, soon).run_at)
    assert job_ids(store, JobQuery(state=JobState.SCHEDULED)) == {later}
    assert job_ids(store, JobQuery(state=JobState.QUEUED)) == {soon}


def test_a_queues_pages_by_state_are_newest_first_whatever_the_page_size(store: Store) -> None:
    """A queue's queued jobs are its queued, parked and due scheduled ones,
    merged newest first (the SQL stores read each state apart); the other
    states and the queue alone page the same way."""
    key = (ConcurrencyKey("pages", 1),)
    sent = [enqueue_one(store, new_job(0, queue="q"))]
    assert store.cancel(sent) == [True]
    sent += [
        enqueue_one(store, new_job(i, queue="q", concurrency=key, lease=30)) for i in (1, 2, 3)
    ]
    assert [c.id for c in claim(store, ["q"], limit=3)] == [sent[1]]  # 2 and 3 wait for the key
    sent += [
        enqueue_one(store, new_job(4, queue="q")),
        enqueue_one(store, new_job(5, queue="q", delay=0.2)),
        enqueue_one(store, new_job(6, queue="q", delay=600.0)),
        enqueue_one(store, new_job(7, queue="q")),
        enqueue_one(store, new_job(8, queue="other")),
    ]
    wait_until(store, get(store, sent[5]).run_at)

    def pages(state: JobState | None, size: int) -> list[str]:
        return [job.id for job in all_jobs(store, JobQuery(queue="q", state=state), page=size)]

    expected = {
        JobState.QUEUED: [sent[i] for i in (7, 5, 4, 3, 2)],
        JobState.RUNNING: [sent[1]],
        JobState.CANCELLED: [sent[0]],
        JobState.SCHEDULED: [sent[6]],
        JobState.FAILED: [],
        None: sent[7::-1],
    }
    for state, ids in expected.items():
        for size in (1, 2, 5, 50):
            assert pages(state, size) == ids, (state, size)


def test_list_jobs_is_newest_first(store: Store) -> None:
    ids = [enqueue_one(store, new_job(i)) for i in range(6)]
    page = store.list_jobs(JobQuery(), limit=50)
    assert [j.id for j in page.jobs] == ids[::-1]
    assert page.next_cursor is None


def test_keyset_pagination_covers_every_job_once(store: Store) -> None:
    ids: list[str] = []
    for start in range(0, 230, 23):
        ids += [r.id for r in store.enqueue([new_job(i) for i in range(start, start + 23)])]

    seen: list[str] = []
    pages = 0
    cursor: str | None = None
    while True:
        page = store.list_jobs(JobQuery(), limit=40, cursor=cursor)
        assert len(page.jobs) <= 40
        seen += [j.id for j in page.jobs]
        pages += 1
        if pages == 1:  # jobs sent while paging are newer: they do not shift the pages
            store.enqueue([new_job("late", i) for i in range(15)])
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
        assert pages < 100
    assert pages == 6
    assert len(seen) == len(set(seen)) == 230
    assert set(seen) == set(ids)
    assert seen[0] == ids[-1]
    assert seen[-1] == ids[0]


def test_pagination_with_a_filter(store: Store) -> None:
    wanted = [r.id for r in store.enqueue([new_job(i, queue="a") for i in range(25)])]
    store.enqueue([new_job(i, queue="b") for i in range(25)])
    seen = [j.id for j in all_jobs(store, JobQuery(queue="a"), page=7)]
    assert sorted(seen) == sorted(wanted)
    assert len(seen) == 25


def test_exact_multiple_of_the_page_size(store: Store) -> None:
    store.enqueue([new_job(i) for i in range(20)])
    first = store.list_jobs(JobQuery(), limit=10)
    assert first.next_cursor is not None
    second = store.list_jobs(JobQuery(), limit=10, cursor=first.next_cursor)
    assert len(second.jobs) == 10
    if second.next_cursor is not None:
        third = store.list_jobs(JobQuery(), limit=10, cursor=second.next_cursor)
        assert third.jobs == ()
        assert third.next_cursor is None


@pytest.mark.parametrize("size", [0, -1])
def test_bad_page_size_is_refused(store: Store, size: int) -> None:
    with pytest.raises(InvalidArgument):
        store.list_jobs(JobQuery(), limit=size)


@pytest.mark.parametrize("cursor", ["not a cursor", "-1", str(2**63), "1e3"])
def test_bad_cursor_is_refused(store: Store, cursor: str) -> None:
    store.enqueue([new_job(i) for i in range(3)])
    with pytest.raises(InvalidArgument, match="bad cursor"):
        store.list_jobs(JobQuery(), limit=10, cursor=cursor)


def test_queues_counts_jobs_by_state(store: Store) -> None:
    store.enqueue([new_job(i, queue="a", lease=30.0) for i in range(6)])
    enqueue_one(store, new_job(queue="a", delay=60.0))
    claimed = claim(store, ["a"], limit=4)
    assert succeed(store, claimed[0])
    assert fail(store, claimed[1])
    cancelled = enqueue_one(store, new_job(queue="a"))
    assert store.cancel([cancelled]) == [True]
    enqueue_one(store, new_job(queue="b"))
    store.pause_queue("c")

    info = {q.name: q for q in store.queues()}
    assert set(info) == {"a", "b", "c"}
    assert info["a"].counts == {
        JobState.QUEUED: 2,
        JobState.SCHEDULED: 1,
        JobState.RUNNING: 2,
        JobState.SUCCEEDED: 1,
        JobState.FAILED: 1,
        JobState.CANCELLED: 1,
    }
    assert not info["a"].paused
    assert info["b"].counts == {JobState.QUEUED: 1}
    assert info["c"].paused
    assert sum(info["c"].counts.values()) == 0
    assert [q.name for q in store.queues()] == ["a", "b", "c"]


def test_queues_lists_only_queues_with_jobs_or_paused(store: Store) -> None:
    gone = enqueue_one(store, new_job(queue="one-off"))
    store.pause_queue("paused-then-resumed")
    enqueue_one(store, new_job(queue="kept"))
    assert {q.name for q in store.queues()} == {"one-off", "paused-then-resumed", "kept"}

    assert store.delete([gone]) == [True]
    store.resume_queue("paused-then-resumed")
    assert [q.name for q in store.queues()] == ["kept"]


def test_throughput_and_totals_count_outcomes(store: Store) -> None:
    since = store.now() - 1
    store.enqueue([new_job(i, task="fetch", queue="crawl", lease=30.0) for i in range(5)])
    store.enqueue([new_job(i, task="parse", queue="crawl", lease=30.0) for i in range(1)])
    claimed = claim(store, ["crawl"], limit=6)
    by_task = {c.task: c for c in claimed}
    fetches = [c for c in claimed if c.task == "fetch"]
    for job in fetches[:3]:
        assert succeed(store, job)
    for job in fetches[3:]:
        assert fail(store, job)
    assert succeed(store, by_task["parse"])

    totals = {(t.queue, t.task): (t.succeeded, t.failed) for t in store.totals()}
    assert totals == {("crawl", "fetch"): (3, 2), ("crawl", "parse"): (1, 0)}
    assert {t.minute for t in store.totals()} == {0}

    minutes = store.throughput(since)
    assert all(isinstance(m, MinuteStats) for m in minutes)
    assert all(m.minute >= int(since // 60) for m in minutes)
    summed: dict[tuple[str, str], list[int]] = {}
    for m in minutes:
        counts = summed.setdefault((m.queue, m.task), [0, 0])
        counts[0] += m.succeeded
        counts[1] += m.failed
    assert summed == {("crawl", "fetch"): [3, 2], ("crawl", "parse"): [1, 0]}
    assert store.throughput(store.now() + 120) == []


def test_failed_attempts_that_are_retried_are_counted_apart(store: Store) -> None:
    since = store.now() - 1
    store.enqueue([new_job(i, task="fetch", lease=30.0, max_attempts=2) for i in range(2)])
    first, second = claim(store, limit=2)
    assert fail(store, first, retry_in=0.0)
    assert fail(store, second)  # no retry asked: the job fails for good
    (again,) = claim(store)
    assert fail(store, again)  # its last attempt: no retry left
    totals = [(t.succeeded, t.failed, t.retried) for t in store.totals()]
    assert totals == [(0, 3, 1)], "three failed attempts, one of them retried"
    per_minute = [(m.failed, m.retried) for m in store.throughput(since)]
    assert (sum(f for f, _ in per_minute), sum(r for _, r in per_minute)) == (3, 1)


def test_refused_outcomes_are_not_counted(store: Store) -> None:
    enqueue_one(store, new_job(lease=30.0))
    claimed = claim_one(store)
    assert succeed(store, claimed)
    assert not succeed(store, claimed)
    assert [(t.succeeded, t.failed) for t in store.totals()] == [(1, 0)]


def test_workers_after_heartbeat_and_removal(store: Store) -> None:
    assert store.workers() == []
    store.heartbeat(
        worker_info(
            "w-1", queues=("a", "b"), running=2, cpu_percent=12.5, load=0.25, claimed_short=False
        )
    )
    first_beat = store.now()
    wait_until(store, first_beat + 0.02)
    store.heartbeat(worker_info("w-2", host="host-b", pid=7))

    workers = store.workers()
    assert [w.id for w in workers] == ["w-2", "w-1"]  # newest heartbeat first
    w1 = workers[1]
    assert (w1.host, w1.pid, w1.queues, w1.running, w1.cpu_percent, w1.load) == (
        "host-a",
        4242,
        ("a", "b"),
        2,
        12.5,
        0.25,
    )
    assert w1.heartbeat_at == pytest.approx(first_beat, abs=0.5)
    # what dispatch by load reads of a peer (rota.worker.load), kept as sent
    assert (w1.claimed_short, workers[0].claimed_short) == (False, True)

    store.heartbeat(worker_info("w-1", running=0, stopping=True))
    workers = store.workers()
    assert [w.id for w in workers] == ["w-1", "w-2"]
    assert (workers[0].running, workers[0].stopping) == (0, True)

    store.remove_worker("w-1")
    assert [w.id for w in store.workers()] == ["w-2"]
    store.remove_worker("never-seen")
    assert [w.id for w in store.workers()] == ["w-2"]


def test_iter_results_streams_every_succeeded_job(store: Store) -> None:
    store.enqueue([new_job(i, task="fetch", lease=30.0) for i in range(23)])
    store.enqueue([new_job(i, task="parse", queue="other", lease=30.0) for i in range(4)])
    expected: dict[str, int] = {}
    for claimed in claim(store, ["default"], limit=30):
        n = int(get(store, claimed.id).args[0])
        if n % 5 == 4:
            assert fail(store, claimed)
        else:
            assert succeed(store, claimed, {"n": n})
            expected[claimed.id] = n
    for claimed in claim(store, ["other"], limit=30):
        assert succeed(store, claimed, "parsed")

    streamed = list(store.iter_results(queue="default", batch=7))
    assert len(streamed) == len({j.id for j in streamed}) == 19
    assert {j.id: j.result["n"] for j in streamed} == expected
    assert {j.state for j in streamed} == {JobState.SUCCEEDED}
    assert len(list(store.iter_results(task="parse"))) == 4
    assert len(list(store.iter_results())) == 23
    assert list(store.iter_results(queue="nowhere")) == []


def test_purge_finished_removes_only_old_finished_jobs(store: Store) -> None:
    old = [r.id for r in store.enqueue([new_job(i, lease=30.0) for i in range(3)])]
    done = claim(store, limit=3)
    assert succeed(store, done[0])
    assert fail(store, done[1])
    running = done[2].id
    old_cancelled = enqueue_one(store, new_job("cancelled"))
    assert store.cancel([old_cancelled]) == [True]
    wait_until(store, store.now() + 0.5)

    fresh = enqueue_one(store, new_job("fresh", lease=30.0))
    assert succeed(store, claim_one(store))
    pending = enqueue_one(store, new_job("pending"))
    scheduled = enqueue_one(store, new_job("later", delay=60.0))

    assert store.purge_finished(older_than=0.3) == 3
    assert job_ids(store) == {running, fresh, pending, scheduled}
    assert store.get_jobs([*old[:2], old_cancelled]) == [None, None, None]
    assert store.purge_finished(older_than=0.3) == 0


def test_purge_finished_respects_its_limit(store: Store) -> None:
    store.enqueue([new_job(i, lease=30.0) for i in range(5)])
    for claimed in claim(store, limit=5):
        assert succeed(store, claimed)
    wait_until(store, store.now() + 0.05)
    assert store.purge_finished(older_than=0.0, limit=2) == 2
    assert len(all_jobs(store)) == 3
    assert store.purge_finished(older_than=0.0) == 3
    assert all_jobs(store) == []


def test_purge_queue_removes_pending_jobs_of_that_queue(store: Store) -> None:
    store.enqueue([new_job(i, queue="q", lease=30.0) for i in range(4)])
    scheduled = enqueue_one(store, new_job("later", queue="q", delay=60.0))
    other = enqueue_one(store, new_job("other", queue="other"))
    claimed = claim(store, ["q"], limit=2)
    assert succeed(store, claimed[0])
    running = claimed[1].id

    assert store.purge_queue("q") == 3  # two queued and one scheduled
    assert store.get_job(scheduled) is None
    assert job_ids(store) == {claimed[0].id, running, other}
    assert get(store, running).state is JobState.RUNNING
    assert claim(store, ["q"]) == []
    assert store.purge_queue("q") == 0
    assert store.purge_queue("nowhere") == 0
