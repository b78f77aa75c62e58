"""Inspection of jobs whose stored JSON rota did not write: every verb returns
the job with what could be read, and says why in its error."""

from __future__ import annotations

import pytest

from backends import overwrite_job
from conformance.support import (
    all_jobs,
    claim_one,
    enqueue_one,
    fail,
    get,
    new_job,
    succeed,
    worker_info,
)
from rota.models import JobQuery, JobState
from rota.stores import Store

#: Stored payloads that are not ``{"args": [...], "kwargs": {...}}``.
CORRUPT_PAYLOADS = {
    "not-utf8": b'{"args": ["\xff\xfe"]}',
    "truncated": b'{"args": [1, 2',
    "empty": b"",
    "list": b"[1, 2]",
    "null": b"null",
    "number": b"42",
    "args-not-list": b'{"args": 5}',
    "kwargs-not-object": b'{"kwargs": []}',
    "unknown-key": b'{"args": [], "pickle": "x"}',
}


@pytest.fixture
def corrupt(store: Store, backend: str, url: str) -> dict[str, str]:
    """One queued job per corrupt payload, by name, with a good job beside them."""
    ids = {}
    for name, raw in CORRUPT_PAYLOADS.items():
        ids[name] = enqueue_one(store, new_job(name, task="t", queue="damaged"))
        overwrite_job(backend, url, ids[name], raw)
    ids["good"] = enqueue_one(store, new_job("fine", task="t", queue="damaged"))
    return ids


def test_get_job_returns_a_corrupt_job_with_no_arguments_and_says_why(
    store: Store, corrupt: dict[str, str]
) -> None:
    for name in CORRUPT_PAYLOADS:
        job = get(store, corrupt[name])
        assert (job.state, job.args, job.kwargs) == (JobState.QUEUED, [], {}), name
        assert job.error is not None and job.error.startswith("CorruptJob: "), name
        assert corrupt[name] in job.error
    good = get(store, corrupt["good"])
    assert (good.args, good.kwargs, good.error) == (["fine"], {}, None)


def test_get_jobs_and_list_jobs_return_every_corrupt_job(
    store: Store, corrupt: dict[str, str]
) -> None:
    ids = list(corrupt.values())
    fetched = store.get_jobs(ids)
    assert [j.id if j else None for j in fetched] == ids
    for query in (
        JobQuery(),
        JobQuery(queue="damaged"),
        JobQuery(task="t", state=JobState.QUEUED),
        JobQuery(queue="damaged", state=JobState.QUEUED),
    ):
        listed = {j.id: j for j in all_jobs(store, query, page=3)}
        assert set(listed) == set(ids), query
        assert all(listed[corrupt[n]].args == [] for n in CORRUPT_PAYLOADS)
    found = all_jobs(store, JobQuery(search="fine"))
    assert [j.id for j in found] == [corrupt["good"]]


def test_a_corrupt_payload_does_not_hide_the_jobs_own_error(
    store: Store, backend: str, url: str
) -> None:
    job_id = enqueue_one(store, new_job(1, task="t"))
    assert fail(store, claim_one(store), error="ValueError: boom")
    overwrite_job(backend, url, job_id, b"\x00\x01")
    job = get(store, job_id)
    assert (job.state, job.args, job.error) == (JobState.FAILED, [], "ValueError: boom")


@pytest.mark.parametrize(
    ("field", "raw"),
    [("result", b'{"half": '), ("result", b"\xc3\x28"), ("history", b"[1, 2]"), ("history", b"{")],
)
def test_a_corrupt_result_or_history_reads_as_empty_with_a_note(
    store: Store, backend: str, url: str, field: str, raw: bytes
) -> None:
    job_id = enqueue_one(store, new_job(7, task="t"))
    assert succeed(store, claim_one(store), result={"n": 7})
    if backend == "postgres" and field == "history" and raw == b"{":
        import psycopg  # PostgreSQL keeps the history as jsonb: it cannot be damaged so

        with pytest.raises(psycopg.errors.InvalidTextRepresentation):
            overwrite_job(backend, url, job_id, raw, field=field)
        return
    overwrite_job(backend, url, job_id, raw, field=field)
    job = get(store, job_id)
    assert (job.state, job.args) == (JobState.SUCCEEDED, [7])
    assert job.error is not None and f"the stored {field} is not" in job.error
    if field == "result":
        assert job.result is None
    else:
        assert job.result == {"n": 7} and job.history == ()
    assert [j.id for j in all_jobs(store, JobQuery(state=JobState.SUCCEEDED))] == [job_id]
    assert [j.id for j in store.iter_results()] == [job_id]


def test_a_heartbeat_carries_the_count_of_survived_errors(store: Store) -> None:
    store.heartbeat(worker_info("w-errors", errors=3))
    store.heartbeat(worker_info("w-clean"))
    counts = {w.id: w.errors for w in store.workers()}
    assert counts == {"w-errors": 3, "w-clean": 0}
