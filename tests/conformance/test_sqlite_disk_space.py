"""An SQLite database gives the space of purged jobs back to the file system:
a database rota makes uses incremental auto-vacuum, and each retention pass
(``purge_finished``) gives its free pages beyond a few MiB back, a bounded
number per turn to write and per call. A database made before keeps its free pages for
reuse until converted as docs/sqlite.md, "Disk space", says. The
write-ahead log, grown by a burst, is cut back once it starts over."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from conformance.support import new_job, succeed_all
from helpers import wait_for
from rota.stores import open_store
from rota.stores.sqlite import SQLiteStore
from rota.stores.sqlite._conn import KEEP_FREE_PAGES, WAL_SIZE_LIMIT

#: Jobs of 8 KB each: about 6,000 pages of 4 KiB in all.
JOBS, PAYLOAD = 3000, 8000


def pages(path: Path) -> tuple[int, int, int]:
    """The database's pages, its free pages and its auto-vacuum mode, read
    through its write-ahead log."""
    with sqlite3.connect(path) as conn:
        return (
            conn.execute("PRAGMA page_count").fetchone()[0],
            conn.execute("PRAGMA freelist_count").fetchone()[0],
            conn.execute("PRAGMA auto_vacuum").fetchone()[0],
        )


def checkpointed_size(path: Path) -> int:
    """The file's size once its write-ahead log is written back into it."""
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    return path.stat().st_size


def run_big_jobs(store: SQLiteStore) -> None:
    """Send JOBS jobs of PAYLOAD bytes, run them all to success."""
    store.enqueue([new_job("x" * PAYLOAD) for _ in range(JOBS)])
    assert succeed_all(store) == JOBS


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "jobs.db"


@pytest.fixture
def store(path: Path) -> Iterator[SQLiteStore]:
    opened = open_store(f"sqlite:///{path}")
    assert isinstance(opened, SQLiteStore)
    yield opened
    opened.close()


def test_a_new_database_gives_the_space_of_purged_jobs_back(path: Path, store: SQLiteStore) -> None:
    run_big_jobs(store)
    full, _, mode = pages(path)
    full_size = checkpointed_size(path)
    assert mode == 2  # incremental
    assert store.purge_finished(0.0, 10_000) == JOBS
    after, free, _ = pages(path)
    assert free <= KEEP_FREE_PAGES
    assert after < full / 2, (full, after)
    assert checkpointed_size(path) < full_size / 2
    # what is left still works: a job sent now runs
    run_big_jobs(store)


def test_free_pages_are_given_back_a_bounded_step_per_turn(path: Path, store: SQLiteStore) -> None:
    sent = store.enqueue([new_job("x" * PAYLOAD) for _ in range(JOBS)])
    assert all(store.delete([s.id for s in sent]))  # (a delete leaves its pages free)
    _, free, _ = pages(path)
    assert free > 300
    assert store.give_back_free_pages(keep=0, step=100, most=100) == 100
    assert pages(path)[1] == free - 100
    assert store.give_back_free_pages(keep=free - 250, step=100) == 150  # 100, then 50
    assert pages(path)[1] == free - 250
    assert store.give_back_free_pages(keep=0, step=100, most=None) == free - 250  # all
    assert pages(path)[1] == 0


def test_an_older_database_keeps_its_free_pages_until_converted(path: Path) -> None:
    with sqlite3.connect(path) as conn:  # made without auto-vacuum, as rota did before
        conn.execute("CREATE TABLE made_before (x)")
    store = open_store(f"sqlite:///{path}")
    assert isinstance(store, SQLiteStore)
    try:
        run_big_jobs(store)
        assert store.purge_finished(0.0, 10_000) == JOBS
        full, free, mode = pages(path)
        assert mode == 0
        assert free > JOBS  # kept for reuse
        assert store.give_back_free_pages() == 0
    finally:
        store.close()
    # docs/sqlite.md, "Disk space": with every process of the database stopped
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA auto_vacuum = INCREMENTAL")
        conn.execute("VACUUM")
    finally:
        conn.close()
    converted, free, mode = pages(path)
    assert (mode, free) == (2, 0)
    assert converted < full / 2
    store = open_store(f"sqlite:///{path}")
    assert isinstance(store, SQLiteStore)
    try:
        run_big_jobs(store)
        assert store.purge_finished(0.0, 10_000) == JOBS
        assert pages(path)[1] <= KEEP_FREE_PAGES
    finally:
        store.close()


def test_the_write_ahead_log_is_cut_back_after_a_burst(path: Path, store: SQLiteStore) -> None:
    run_big_jobs(store)  # 24 MB sent in one transaction: the log grew past it
    assert store.purge_finished(0.0, 10_000) == JOBS
    wal = path.with_name(path.name + "-wal")

    def cut_back() -> bool:
        store.enqueue([new_job(1)])  # (the log starts over at a write after a checkpoint)
        return wal.stat().st_size <= WAL_SIZE_LIMIT

    wait_for(cut_back, timeout=10, interval=0.05, what="the write-ahead log cut back")


def test_a_purged_queue_gives_all_its_space_back_at_once(path: Path, store: SQLiteStore) -> None:
    store.enqueue([new_job("x" * PAYLOAD) for _ in range(JOBS)])
    full, _, _ = pages(path)
    assert store.purge_queue("default") == JOBS
    after, free, _ = pages(path)
    assert free <= KEEP_FREE_PAGES
    assert after < full / 2, (full, after)
