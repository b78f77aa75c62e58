"""Redis: a queued job is indexed only per queue (its ready sub-queue and
its queue's paged index ``qpage:QUEUE:N``), not in ``state:queued`` nor
``task:TASK``; lists that need every queued job, or a task's, read every
queue's. Jobs written by the earlier layouts, which indexed queued jobs in
``qstate:QUEUE:queued`` and also in those indexes, still list and count
once and leave those indexes as they move on.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

redis = pytest.importorskip("redis")

from backends import drop_store, store_url  # noqa: E402
from conformance.support import all_jobs, claim_one, enqueue_one, new_job  # noqa: E402
from rota.models import JobQuery, JobState, LeaseRef  # noqa: E402
from rota.stores import open_store  # noqa: E402
from rota.stores.redis import RedisStore  # noqa: E402
from rota.stores.redis.keys import QUEUED_PAGE  # noqa: E402


@pytest.fixture
def rstore(tmp_path: Path) -> Iterator[RedisStore]:
    url = store_url("redis", tmp_path)
    store = open_store(url)
    assert isinstance(store, RedisStore)
    yield store
    store.close()
    drop_store("redis", url)


@pytest.fixture
def client(rstore: RedisStore) -> Iterator[redis.Redis]:
    value = redis.Redis.from_url(rstore.options.url.split("?", 1)[0])
    yield value
    value.close()


def ids(store: RedisStore, query: JobQuery, page: int = 100) -> list[str]:
    return [job.id for job in all_jobs(store, query, page=page)]


def test_queued_jobs_of_every_queue_are_listed_by_state_task_and_prefix(
    rstore: RedisStore, client: redis.Redis
) -> None:
    k = rstore.keys
    a = enqueue_one(rstore, new_job("a", task="fetch", queue="q1"))
    b = enqueue_one(rstore, new_job("b", task="fetch", queue="q2"))
    c = enqueue_one(rstore, new_job("c", task="parse", queue="q2"))
    assert client.exists(k.state(JobState.QUEUED), k.task("fetch"), k.task("parse")) == 0
    assert ids(rstore, JobQuery(state=JobState.QUEUED)) == [c, b, a]  # newest first
    assert ids(rstore, JobQuery(task="fetch")) == [b, a]
    assert ids(rstore, JobQuery(task="fetch", state=JobState.QUEUED)) == [b, a]
    assert ids(rstore, JobQuery()) == [c, b, a]
    assert rstore.find_job_ids(b[:8]) == [b]
    counts = {q.name: q.counts for q in rstore.queues()}
    assert counts == {"q1": {JobState.QUEUED: 1}, "q2": {JobState.QUEUED: 2}}


def test_a_job_enters_its_task_index_when_claimed_or_cancelled(
    rstore: RedisStore, client: redis.Redis
) -> None:
    k = rstore.keys
    run = enqueue_one(rstore, new_job("run", task="fetch", queue="q"))
    drop = enqueue_one(rstore, new_job("drop", task="fetch", queue="q"))
    claim_one(rstore, "q")
    assert rstore.cancel([drop]) == [True]
    assert {m.decode() for m in client.zrange(k.task("fetch"), 0, -1)} == {run, drop}
    assert ids(rstore, JobQuery(task="fetch")) == [drop, run]


def test_a_job_back_in_the_queue_and_in_its_task_index_is_listed_once(
    rstore: RedisStore, client: redis.Redis
) -> None:
    k = rstore.keys
    older = enqueue_one(rstore, new_job("older", task="fetch", queue="q"))
    back = enqueue_one(rstore, new_job("back", task="fetch", queue="q"))
    newer = enqueue_one(rstore, new_job("newer", task="fetch", queue="q"))
    claimed = claim_one(rstore, "q")
    assert claimed.id == older
    held = claim_one(rstore, "q")
    assert held.id == back
    assert rstore.release([LeaseRef(back, held.token)]) == [True]
    assert client.zscore(k.task("fetch"), back) is not None  # and queued again
    assert rstore.get_job(back).state is JobState.QUEUED  # type: ignore[union-attr]
    for page in (1, 2, 100):  # a page boundary never splits the two entries
        assert ids(rstore, JobQuery(task="fetch"), page=page) == [newer, back, older]
        assert ids(rstore, JobQuery(task="fetch", state=JobState.QUEUED), page=page) == [
            newer,
            back,
        ]


def write_earlier_layout(rstore: RedisStore, client: redis.Redis, job_id: str) -> None:
    """Index a queued job as the earliest layout did: in qstate:QUEUE:queued
    (not in the queue's pages), state:queued and task:TASK."""
    k = rstore.keys
    job = rstore.get_job(job_id)
    assert job is not None
    seq = int(client.hget(k.job(job_id), "seq"))  # type: ignore[arg-type]
    assert client.zrem(k.qpage(job.queue, seq // QUEUED_PAGE), job_id) == 1
    client.decr(k.qcount(job.queue))
    client.zadd(k.qstate(job.queue, JobState.QUEUED), {job_id: seq})
    client.zadd(k.state(JobState.QUEUED), {job_id: seq})
    client.zadd(k.task(job.task), {job_id: seq})


def test_queued_jobs_written_by_the_earlier_layout(rstore: RedisStore, client: redis.Redis) -> None:
    """The earliest layout put queued jobs in qstate:QUEUE:queued,
    state:queued and task:TASK (written here as it did); they list and count
    once beside jobs of the paged index, and leave those indexes when
    claimed or cancelled."""
    k = rstore.keys
    jobs = [enqueue_one(rstore, new_job(str(i), task="fetch", queue="q")) for i in range(4)]
    for job_id in jobs[:3]:
        write_earlier_layout(rstore, client, job_id)
    newest_first = jobs[::-1]
    assert ids(rstore, JobQuery(task="fetch")) == newest_first
    assert ids(rstore, JobQuery(state=JobState.QUEUED)) == newest_first
    assert ids(rstore, JobQuery(queue="q", state=JobState.QUEUED), page=1) == newest_first
    assert ids(rstore, JobQuery()) == newest_first
    assert rstore.find_job_ids(jobs[0][:10]) == [jobs[0]]
    assert rstore.find_job_ids(jobs[3][:10]) == [jobs[3]]
    assert [q.counts for q in rstore.queues()] == [{JobState.QUEUED: 4}]

    assert claim_one(rstore, "q").id == jobs[0]
    assert rstore.cancel([jobs[1]]) == [True]
    assert {m.decode() for m in client.zrange(k.state(JobState.QUEUED), 0, -1)} == {jobs[2]}
    assert claim_one(rstore, "q").id == jobs[2]
    assert client.exists(k.state(JobState.QUEUED), k.qstate("q", JobState.QUEUED)) == 0
    assert [q.counts[JobState.QUEUED] for q in rstore.queues()] == [1]
    assert rstore.purge_queue("q") == 1  # the one in the paged index
    assert ids(rstore, JobQuery(task="fetch")) == newest_first[1:]
    states = {job.id: job.state for job in all_jobs(rstore, JobQuery())}
    assert states == {
        jobs[0]: JobState.RUNNING,
        jobs[1]: JobState.CANCELLED,
        jobs[2]: JobState.RUNNING,
    }


def test_job_hashes_hold_no_id_and_older_ones_with_an_id_still_read(
    rstore: RedisStore, client: redis.Redis
) -> None:
    k = rstore.keys
    new = enqueue_one(rstore, new_job("new", task="fetch", queue="q"))
    old = enqueue_one(rstore, new_job("old", task="fetch", queue="q"))
    assert not client.hexists(k.job(new), "id")
    client.hset(k.job(old), "id", old)  # as earlier versions wrote it
    for job_id in (new, old):
        assert rstore.get_job(job_id).id == job_id  # type: ignore[union-attr]
    assert ids(rstore, JobQuery(queue="q")) == [old, new]
    claimed = [claim_one(rstore, "q"), claim_one(rstore, "q")]
    assert [c.id for c in claimed] == [new, old]
    assert [j.id for j in rstore.get_jobs([old, new])] == [old, new]  # type: ignore[union-attr]


def test_the_queued_index_is_paged_in_compact_sorted_sets(
    rstore: RedisStore, client: redis.Redis
) -> None:
    """A queue's queued jobs are indexed in pages of QUEUED_PAGE sequence
    numbers, each small enough for Redis's listpack encoding; lists page
    through them newest first whatever the page size, counts come from a
    counter, and a page, its listing and the counter go with their jobs."""
    k = rstore.keys
    count = 2 * QUEUED_PAGE + 5
    rstore.enqueue([new_job(f"j{i}", queue="q") for i in range(count)])
    sent = rstore.claim("w", ["q"], 3)  # three leave the queue
    pages = sorted(int(p) for p in client.zrange(k.qpages("q"), 0, -1))
    assert len(pages) == 3
    for page in pages:
        assert client.object("encoding", k.qpage("q", page)) == b"listpack"
    assert client.get(k.qcount("q")) == str(count - 3).encode()
    assert client.exists(k.qstate("q", JobState.QUEUED)) == 0
    assert [q.counts[JobState.QUEUED] for q in rstore.queues()] == [count - 3]

    queued = [job.id for job in all_jobs(rstore, JobQuery(queue="q", state=JobState.QUEUED))]
    assert len(queued) == count - 3 and not {c.id for c in sent} & set(queued)
    for page in (1, 7, QUEUED_PAGE, 1000):
        assert ids(rstore, JobQuery(queue="q", state=JobState.QUEUED), page=page) == queued
        assert ids(rstore, JobQuery(state=JobState.QUEUED), page=page) == queued
    seqs = [int(client.hget(k.job(job_id), "seq")) for job_id in queued]  # type: ignore[arg-type]
    assert seqs == sorted(seqs, reverse=True)
    assert rstore.find_job_ids(queued[-1][:12]) == [queued[-1]]

    while rstore.claim("w", ["q"], 100):
        pass
    assert client.exists(k.qpages("q"), k.qcount("q")) == 0
    assert not list(client.scan_iter(k.qpage("q", "*")))  # type: ignore[arg-type]
    assert [q.counts.get(JobState.QUEUED, 0) for q in rstore.queues()] == [0]


def test_purging_a_queue_empties_its_pages(rstore: RedisStore, client: redis.Redis) -> None:
    k = rstore.keys
    rstore.enqueue([new_job(f"j{i}", queue="q") for i in range(QUEUED_PAGE + 10)])
    assert rstore.purge_queue("q") == QUEUED_PAGE + 10
    assert client.exists(k.qpages("q"), k.qcount("q")) == 0
    assert not list(client.scan_iter(k.qpage("q", "*")))  # type: ignore[arg-type]
    assert ids(rstore, JobQuery(queue="q")) == []


def test_a_job_hash_leaves_out_fields_at_their_defaults(
    rstore: RedisStore, client: redis.Redis
) -> None:
    """Priority 0, no fairness key, no limits, no attempt or loss yet, and an
    enqueued_at equal to the run_at are not stored, and read back as such."""
    k = rstore.keys
    plain = enqueue_one(rstore, new_job("plain", queue="q"))
    later = enqueue_one(rstore, new_job("later", queue="q", priority=3, delay=60))
    left_out = {b"priority", b"fair", b"attempt", b"lost", b"sig", b"enqueued_at"}
    assert not set(client.hkeys(k.job(plain))) & left_out
    assert set(client.hkeys(k.job(later))) & left_out == {b"priority", b"enqueued_at"}
    job = rstore.get_job(plain)
    assert job is not None
    assert (job.priority, job.attempt, job.lost, job.enqueued_at) == (0, 0, 0, job.run_at)
    claimed = claim_one(rstore, "q")
    assert (claimed.id, claimed.attempt, claimed.lost) == (plain, 1, 0)
    assert claimed.enqueued_at == job.run_at
