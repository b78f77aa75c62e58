"""Job logs: appended in batches, kept per attempt under a byte cap (oldest
dropped, the drop noted), read after a sequence number, gone with the job."""

from __future__ import annotations

import pytest

from conformance.support import claim_one, enqueue_one, new_job, succeed
from rota.errors import InvalidArgument
from rota.models import LogChunk
from rota.stores import Store


def lines(chunks: list[LogChunk]) -> list[str]:
    return [c.data for c in chunks]


def test_chunks_come_back_per_attempt_in_order_with_the_store_clock(store: Store) -> None:
    job_id = enqueue_one(store, new_job())
    before = store.now()
    store.append_logs(
        [
            LogChunk(job_id, 1, "stdout", "one\n"),
            LogChunk(job_id, 1, "log", "INFO two\n"),
            LogChunk(job_id, 2, "stderr", "three\n"),
        ]
    )
    store.append_logs([LogChunk(job_id, 1, "stdout", "four\n", at=123.5)])
    everything = store.job_logs(job_id)
    assert [(c.attempt, c.stream, c.data) for c in everything] == [
        (1, "stdout", "one\n"),
        (1, "log", "INFO two\n"),
        (1, "stdout", "four\n"),
        (2, "stderr", "three\n"),
    ]
    assert all(c.job_id == job_id for c in everything)
    assert before - 1 <= everything[0].at <= store.now() + 1
    assert everything[2].at == 123.5
    assert lines(store.job_logs(job_id, attempt=2)) == ["three\n"]
    assert store.job_logs(job_id, attempt=3) == []


def test_after_returns_only_newer_chunks_for_following(store: Store) -> None:
    job_id = enqueue_one(store, new_job())
    store.append_logs([LogChunk(job_id, 1, "stdout", f"{i}\n") for i in range(3)])
    seen = store.job_logs(job_id)
    assert len({c.seq for c in seen}) == 3
    assert [c.seq for c in seen] == sorted(c.seq for c in seen)
    assert store.job_logs(job_id, after=seen[-1].seq) == []
    store.append_logs([LogChunk(job_id, 1, "stdout", "3\n")])
    newer = store.job_logs(job_id, after=seen[-1].seq)
    assert lines(newer) == ["3\n"]
    assert lines(store.job_logs(job_id, after=seen[0].seq, limit=1)) == ["1\n"]


def test_over_the_cap_the_oldest_chunks_go_and_a_note_counts_their_bytes(store: Store) -> None:
    job_id = enqueue_one(store, new_job())
    store.append_logs([LogChunk(job_id, 1, "stdout", f"line {i:02d}\n") for i in range(10)], cap=40)
    kept = store.job_logs(job_id, attempt=1)
    assert kept[0].stream == "rota"
    assert kept[0].data == "[... 40 bytes dropped ...]\n"
    assert lines(kept[1:]) == [f"line {i:02d}\n" for i in range(5, 10)]
    store.append_logs([LogChunk(job_id, 1, "stdout", "é" * 8 + "\n")], cap=40)
    kept = store.job_logs(job_id, attempt=1)
    assert kept[0].data == "[... 64 bytes dropped ...]\n"  # é is two bytes in UTF-8
    assert sum(len(c.data.encode()) for c in kept[1:]) <= 40
    assert lines(kept[-1:]) == ["é" * 8 + "\n"]
    # the other attempt's cap is its own
    store.append_logs([LogChunk(job_id, 2, "stdout", "x" * 30 + "\n")], cap=40)
    assert lines(store.job_logs(job_id, attempt=2)) == ["x" * 30 + "\n"]


def test_the_newest_chunk_is_kept_even_over_the_cap(store: Store) -> None:
    job_id = enqueue_one(store, new_job())
    store.append_logs([LogChunk(job_id, 1, "stdout", "small\n")], cap=10)
    store.append_logs([LogChunk(job_id, 1, "stdout", "y" * 50)], cap=10)
    kept = store.job_logs(job_id)
    assert lines(kept) == ["[... 6 bytes dropped ...]\n", "y" * 50]


def test_logs_go_with_the_job_on_delete_and_purge(store: Store) -> None:
    pending = enqueue_one(store, new_job())
    finished = enqueue_one(store, new_job(queue="done"))
    queued = enqueue_one(store, new_job(queue="other"))
    succeed(store, claim_one(store, "done"))
    for job_id in (pending, finished, queued):
        store.append_logs([LogChunk(job_id, 1, "stdout", "hello\n")])
    assert store.delete([pending]) == [True]
    assert store.job_logs(pending) == []
    assert store.purge_finished(0.0) >= 1
    assert store.job_logs(finished) == []
    assert store.purge_queue("other") == 1
    assert store.job_logs(queued) == []
    # a job enqueued again under the same id starts without the old log
    enqueue_one(store, new_job(job_id=pending))
    assert store.job_logs(pending) == []


def test_chunks_of_unknown_jobs_are_ignored(store: Store) -> None:
    store.append_logs([LogChunk("no-such-job", 1, "stdout", "lost\n")])
    assert store.job_logs("no-such-job") == []
    assert store.append_logs([]) is None


@pytest.mark.parametrize(
    ("chunk", "cap", "message"),
    [
        (LogChunk("j", 1, "stdin", "x"), 100, "log stream must be one of"),
        (LogChunk("j", -1, "stdout", "x"), 100, "attempt must be"),
        (LogChunk("", 1, "stdout", "x"), 100, "job id"),
        (LogChunk("j", 1, "stdout", b"x"), 100, "log data must be text"),  # type: ignore[arg-type]
        (LogChunk("j", 1, "stdout", "x", at=float("nan")), 100, "log time"),
        (LogChunk("j", 1, "stdout", "x"), 0, "log cap"),
    ],
)
def test_bad_chunks_are_refused_and_nothing_is_written(
    store: Store, chunk: LogChunk, cap: int, message: str
) -> None:
    job_id = enqueue_one(store, new_job(job_id="j"))
    good = LogChunk(job_id, 1, "stdout", "fine\n")
    with pytest.raises(InvalidArgument, match=message):
        store.append_logs([good, chunk], cap=cap)
    assert store.job_logs(job_id) == []


def test_bad_queries_are_refused(store: Store) -> None:
    with pytest.raises(InvalidArgument, match="after"):
        store.job_logs("j", after=-1)
    with pytest.raises(InvalidArgument, match="attempt"):
        store.job_logs("j", attempt=-2)
    with pytest.raises(InvalidArgument, match="log page size"):
        store.job_logs("j", limit=0)
