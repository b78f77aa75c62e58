"""Redis: a job is indexed by state per queue only (``qstate:QUEUE:STATE``,
queued jobs in their queue's pages), never in a global ``state:STATE``;
lists by state across queues, prefix look-ups and retrying every failed job
read every queue's index. Jobs written by earlier versions, which were also
indexed in ``state:STATE``, list once and leave that index as they move on.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

redis = pytest.importorskip("redis")

from backends import drop_store, store_url  # noqa: E402
from conformance.support import (  # noqa: E402
    all_jobs,
    claim_one,
    enqueue_one,
    fail,
    new_job,
    succeed,
)
from rota.models import JobQuery, JobState  # noqa: E402
from rota.stores import open_store  # noqa: E402
from rota.stores.redis import RedisStore  # noqa: E402


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


def global_indexes(rstore: RedisStore, client: redis.Redis) -> int:
    return int(client.exists(*(rstore.keys.state(state) for state in JobState)))


def test_jobs_of_every_queue_are_listed_by_state_without_a_global_index(
    rstore: RedisStore, client: redis.Redis
) -> None:
    done, failed, running, other_failed = (
        enqueue_one(rstore, new_job(name, queue=queue))
        for name, queue in (("a", "q1"), ("b", "q2"), ("c", "q1"), ("d", "q3"))
    )
    assert succeed(rstore, claim_one(rstore, "q1"))
    assert fail(rstore, claim_one(rstore, "q2"))
    assert claim_one(rstore, "q1").id == running
    assert fail(rstore, claim_one(rstore, "q3"))
    assert global_indexes(rstore, client) == 0

    assert ids(rstore, JobQuery(state=JobState.FAILED)) == [other_failed, failed]
    assert ids(rstore, JobQuery(state=JobState.FAILED), page=1) == [other_failed, failed]
    assert ids(rstore, JobQuery(state=JobState.SUCCEEDED)) == [done]
    assert ids(rstore, JobQuery(state=JobState.RUNNING)) == [running]
    assert ids(rstore, JobQuery()) == [other_failed, running, failed, done]
    assert ids(rstore, JobQuery(task="task", state=JobState.FAILED)) == [other_failed, failed]
    assert rstore.find_job_ids(failed[:10]) == [failed]
    assert rstore.find_job_ids(done[:10]) == [done]

    assert rstore.retry_failed() == 2  # every queue's
    assert ids(rstore, JobQuery(state=JobState.QUEUED)) == [other_failed, failed]
    assert global_indexes(rstore, client) == 0


def test_retrying_the_failed_jobs_of_one_queue_leaves_the_others(rstore: RedisStore) -> None:
    first = enqueue_one(rstore, new_job("a", queue="q1"))
    second = enqueue_one(rstore, new_job("b", queue="q2"))
    assert fail(rstore, claim_one(rstore, "q1"))
    assert fail(rstore, claim_one(rstore, "q2"))
    assert rstore.retry_failed(queue="q2") == 1
    assert ids(rstore, JobQuery(state=JobState.FAILED)) == [first]
    assert ids(rstore, JobQuery(state=JobState.QUEUED)) == [second]
    assert rstore.retry_failed(task="other") == 0
    assert rstore.retry_failed(task="task") == 1


def test_jobs_written_with_a_global_state_entry_list_once_and_leave_it(
    rstore: RedisStore, client: redis.Redis
) -> None:
    """Earlier versions indexed every job not queued in ``state:STATE`` as well
    as in ``qstate:QUEUE:STATE`` (written here as they did)."""
    k = rstore.keys
    done = enqueue_one(rstore, new_job("a", queue="q1"))
    failed = enqueue_one(rstore, new_job("b", queue="q2"))
    assert succeed(rstore, claim_one(rstore, "q1"))
    assert fail(rstore, claim_one(rstore, "q2"))
    for job_id, state in ((done, JobState.SUCCEEDED), (failed, JobState.FAILED)):
        seq = int(client.hget(k.job(job_id), "seq"))  # type: ignore[arg-type]
        client.zadd(k.state(state), {job_id: seq})

    assert ids(rstore, JobQuery()) == [failed, done]
    assert ids(rstore, JobQuery(state=JobState.FAILED)) == [failed]
    assert rstore.find_job_ids(failed[:10]) == [failed]

    assert rstore.retry_failed() == 1
    assert not client.exists(k.state(JobState.FAILED))
    assert rstore.delete([done]) == [True]
    assert global_indexes(rstore, client) == 0
    assert ids(rstore, JobQuery()) == [failed]
