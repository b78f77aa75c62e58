"""SQLite schema migrations: numbered, applied in order, data kept."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from rota.models import JobState, NewJob
from rota.stores.sql.queries import migrations
from rota.stores.sqlite import SQLiteStore


def test_migrations_are_numbered_from_one_without_gaps() -> None:
    numbers = [number for number, _ in migrations("rota.stores.sqlite")]
    assert numbers == list(range(1, len(numbers) + 1))


def test_a_fresh_database_is_at_the_latest_version(tmp_path: Path) -> None:
    store = SQLiteStore(str(tmp_path / "new.db"))
    version = store._conn().execute("PRAGMA user_version").fetchone()[0]
    assert version == migrations("rota.stores.sqlite")[-1][0]
    store.close()


def test_an_old_database_is_upgraded_and_keeps_its_jobs(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    first = migrations("rota.stores.sqlite")[0][1]
    conn = sqlite3.connect(path)
    conn.executescript(first + "\nPRAGMA user_version = 1;")
    conn.execute(
        "INSERT INTO jobs (id, task, queue, state, payload, run_at, enqueued_at)"
        " VALUES ('old-job', 't', 'default', 'queued', '{\"args\": [1]}', 0, 0)"
    )
    conn.commit()
    conn.close()

    store = SQLiteStore(str(path))
    job = store.get_job("old-job")
    assert job is not None and job.state is JobState.QUEUED and job.args == [1]
    store.enqueue([NewJob(id="new-job", task="t", queue="default", payload=b'{"args": []}')])
    claimed = {c.id for c in store.claim("w", ["default"], 10)}
    assert claimed == {"old-job", "new-job"}
    columns = {row[1] for row in store._conn().execute("PRAGMA table_info(jobs)")}
    assert {"parked_on", "parked_until"} <= columns
    store.close()
