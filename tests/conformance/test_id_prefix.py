"""Job ids by prefix: the short ids the dashboard and CLI show resolve to jobs."""

from __future__ import annotations

from typing import Any

import pytest

from conformance.support import claim_one, enqueue_one, fail, get, new_job, succeed
from rota.errors import AmbiguousJobId, InvalidArgument, JobNotFound
from rota.models import JobState
from rota.stores import Store
from rota.stores.base import MIN_PREFIX


def test_find_job_ids_matches_prefixes_in_every_state(store: Store) -> None:
    done = enqueue_one(store, new_job(job_id="aaaa0001done", lease=30.0))
    assert succeed(store, claim_one(store))
    broken = enqueue_one(store, new_job(job_id="aaaa0002fail", lease=30.0, max_attempts=1))
    assert fail(store, claim_one(store))
    later = enqueue_one(store, new_job(job_id="aaaa0003later", delay=3600.0))
    waiting = enqueue_one(store, new_job(job_id="aaab0004"))
    assert get(store, done).state is JobState.SUCCEEDED
    assert get(store, broken).state is JobState.FAILED

    assert store.find_job_ids("aaaa", limit=10) == [done, broken, later]
    assert store.find_job_ids("aaa", limit=10) == [done, broken, later, waiting]
    assert store.find_job_ids("aaaa0003", limit=10) == [later]
    assert store.find_job_ids("aaab0004", limit=10) == [waiting]
    assert store.find_job_ids("aaac", limit=10) == []
    assert store.find_job_ids("b", limit=10) == []
    assert len(store.find_job_ids("aaa", limit=2)) == 2


def test_an_exact_id_is_always_found_first(store: Store) -> None:
    short = enqueue_one(store, new_job(job_id="abc123"))
    longer = [enqueue_one(store, new_job(job_id=f"abc123{i}")) for i in range(4)]
    assert store.find_job_ids("abc123", limit=1) == [short]
    assert store.find_job_ids("abc123", limit=10) == [short, *longer]
    assert store.resolve_job_id("abc123") == short
    assert store.resolve_job_id("abc1232") == longer[2]


def test_glob_and_pattern_characters_are_literal(store: Store) -> None:
    plain = enqueue_one(store, new_job(job_id="xyzxyz-one"))
    odd = enqueue_one(store, new_job(job_id="x*[y]?%_\\z-two"))
    assert store.find_job_ids("x*[y]?", limit=10) == [odd]
    assert store.find_job_ids("x*[y]?%_\\", limit=10) == [odd]
    assert store.find_job_ids("x?z", limit=10) == []
    assert store.find_job_ids("x%", limit=10) == []
    assert store.find_job_ids("xyzxyz", limit=10) == [plain]


def test_resolve_unique_ambiguous_missing_and_short(store: Store) -> None:
    first = enqueue_one(store, new_job(job_id="5e1d9c0a7b21" + "1" * 20))
    second = enqueue_one(store, new_job(job_id="5e1d9c0a7b21" + "0" * 20))
    third = enqueue_one(store, new_job(job_id="f" * 32))

    assert store.resolve_job_id(first) == first
    assert store.resolve_job_id(third[:MIN_PREFIX]) == third
    assert store.resolve_job_id(third[:12]) == third
    assert store.resolve_job_id(first[:13]) == first

    with pytest.raises(AmbiguousJobId) as ambiguous:
        store.resolve_job_id(first[:12])
    assert sorted(ambiguous.value.candidates) == sorted([first, second])
    assert first in str(ambiguous.value) and second in str(ambiguous.value)
    assert isinstance(ambiguous.value, InvalidArgument)

    with pytest.raises(JobNotFound, match="'0123456789ab' not found"):
        store.resolve_job_id("0123456789ab")
    with pytest.raises(JobNotFound):  # shorter than a prefix: only a whole id
        store.resolve_job_id(third[: MIN_PREFIX - 1])
    with pytest.raises(JobNotFound):
        store.resolve_job_id("")


def test_many_matches_list_a_few_candidates(store: Store) -> None:
    ids = [enqueue_one(store, new_job(job_id=f"cafe00{i:02d}")) for i in range(8)]
    with pytest.raises(AmbiguousJobId) as ambiguous:
        store.resolve_job_id("cafe00")
    assert len(ambiguous.value.candidates) == 5
    assert set(ambiguous.value.candidates) <= set(ids)
    assert str(ambiguous.value).endswith(", ...")


def test_deleted_jobs_are_not_found(store: Store) -> None:
    gone = enqueue_one(store, new_job(job_id="dead00beef"))
    assert store.delete([gone]) == [True]
    assert store.find_job_ids("dead00", limit=2) == []
    with pytest.raises(JobNotFound):
        store.resolve_job_id("dead00")


@pytest.mark.parametrize(
    ("prefix", "limit", "message"),
    [
        ("", 2, "non-empty string"),
        (None, 2, "non-empty string"),
        (b"abc", 2, "non-empty string"),
        ("abc\n", 2, "not a job id"),
        ("\udc80abcdef", 2, "not a job id"),
        ("a" * 201, 2, "not a job id"),
        ("abcdef", 0, "between 1 and 1000"),
        ("abcdef", 1001, "between 1 and 1000"),
        ("abcdef", True, "between 1 and 1000"),
        ("abcdef", "2", "between 1 and 1000"),
    ],
)
def test_bad_prefixes_and_limits_are_refused(
    store: Store, prefix: Any, limit: Any, message: str
) -> None:
    kept = enqueue_one(store, new_job(job_id="abcdef0123"))
    with pytest.raises(InvalidArgument, match=message):
        store.find_job_ids(prefix, limit=limit)
    assert store.find_job_ids("abcdef", limit=5) == [kept]
