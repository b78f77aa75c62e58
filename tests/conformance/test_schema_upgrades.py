"""A SQL store made by an earlier rota (its tables one migration behind):
the commands that only read or steer it refuse, naming `rota migrate`, and
leave it as it is; `rota migrate` migrates it and says so; workers and
senders (``open_store`` without ``must_exist``) migrate it as before.

The earlier store is this rota's store with its newest migration undone:
the index that migration builds dropped, and its version forgotten."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from backends import drop_store, mysql_execute, pg_execute, store_url
from rota import App
from rota.cli import main
from rota.stores import MissingStore, OutdatedStore, open_store, redact_url
from rota.stores.sql.queries import newest_migration

KINDS = ["sqlite", "postgres", "mysql"]
#: The newest migration of each store builds this index on ``jobs``.
INDEX = "jobs_queue_seq"


def _sqlite_path(url: str) -> str:
    return url[len("sqlite:///") :]


def _version(kind: str, url: str) -> int:
    """The schema version the store's tables are at, read behind its back."""
    if kind == "sqlite":
        with sqlite3.connect(_sqlite_path(url)) as conn:
            return int(conn.execute("PRAGMA user_version").fetchone()[0])
    if kind == "postgres":
        import psycopg

        schema = url.split("schema=", 1)[1]
        with psycopg.connect(url.split("?", 1)[0]) as conn:
            row = conn.execute(f"SELECT max(version) FROM {schema}.schema_versions").fetchone()
            return int(row[0]) if row else 0
    from backends import _mysql_connect

    conn = _mysql_connect(url.rsplit("/", 1)[1])
    try:
        cursor = conn.cursor()
        cursor.execute("SELECT max(version) FROM schema_versions")
        return int(cursor.fetchone()[0])
    finally:
        conn.close()


def _has_index(kind: str, url: str) -> bool:
    if kind == "sqlite":
        with sqlite3.connect(_sqlite_path(url)) as conn:
            sql = "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = ?"
            return bool(conn.execute(sql, (INDEX,)).fetchone()[0])
    if kind == "postgres":
        schema = url.split("schema=", 1)[1]
        sql = "SELECT 1 FROM pg_indexes WHERE schemaname = %s AND indexname = %s"
        return pg_execute(url, sql, (schema, INDEX)) == 1
    return mysql_execute(url, "SHOW INDEX FROM jobs WHERE Key_name = %s", (INDEX,)) > 0


def _undo_newest_migration(kind: str, url: str) -> int:
    """Take the store back to the version before the newest; that version."""
    newest = newest_migration(f"rota.stores.{kind}")
    if kind == "sqlite":
        with sqlite3.connect(_sqlite_path(url)) as conn:
            conn.execute(f"DROP INDEX {INDEX}")
            conn.execute(f"PRAGMA user_version = {newest - 1}")
    elif kind == "postgres":
        pg_execute(url, f"DROP INDEX {INDEX}")
        pg_execute(url, "DELETE FROM schema_versions WHERE version = %s", (newest,))
    else:
        mysql_execute(url, f"ALTER TABLE jobs DROP INDEX {INDEX}")
        mysql_execute(url, "DELETE FROM schema_versions WHERE version = %s", (newest,))
    assert _version(kind, url) == newest - 1 and not _has_index(kind, url)
    return newest - 1


@pytest.fixture(params=KINDS)
def kind_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str]]:
    kind = str(request.param)
    if kind != "sqlite":
        pytest.importorskip("psycopg" if kind == "postgres" else "MySQLdb")
    url = store_url(kind, tmp_path)
    try:
        yield kind, url
    finally:
        drop_store(kind, url)


@pytest.fixture
def older(kind_url: tuple[str, str]) -> tuple[str, str, int]:
    """A store one migration behind: its kind, URL and version."""
    kind, url = kind_url
    store = open_store(url)
    store.close()
    return kind, url, _undo_newest_migration(kind, url)


def rota(*args: str) -> Result:
    return CliRunner(env={"ROTA_URL": None}).invoke(main, list(args))


READ_AND_STEER: list[Callable[[str], list[str]]] = [
    lambda url: ["status", "--url", url],
    lambda url: ["jobs", "list", "--url", url],
    lambda url: ["queues", "list", "--url", url],
    lambda url: ["schedules", "list", "--url", url],
    lambda url: ["queues", "pause", "default", "--url", url],
]


@pytest.mark.parametrize("command", READ_AND_STEER, ids=lambda c: " ".join(c("URL")[:-2]))
def test_a_read_or_steer_command_refuses_an_older_store_and_leaves_it(
    older: tuple[str, str, int], command: Callable[[str], list[str]]
) -> None:
    kind, url, version = older
    result = rota(*command(url))
    assert result.exit_code == 1, result.output
    newest = newest_migration(f"rota.stores.{kind}")
    assert f"are at version {version}, this rota needs {newest}: run `rota migrate --url " in (
        result.output
    )
    assert "as a user who may alter them, or start a worker" in result.output
    assert _version(kind, url) == version and not _has_index(kind, url)


def test_opening_an_older_store_to_read_raises_outdated_store_with_its_slow_steps(
    older: tuple[str, str, int],
) -> None:
    kind, url, version = older
    with pytest.raises(OutdatedStore) as caught:
        open_store(url, must_exist=True)
    error = caught.value
    assert (error.found, error.newest) == (version, version + 1)
    assert error.url == redact_url(url) and f"--url '{redact_url(url)}'" in str(error)
    assert len(error.slow) == 1 and INDEX in error.slow[0]
    app = App(url)
    app.must_exist = True
    with pytest.raises(OutdatedStore):
        app.store.queues()
    assert _version(kind, url) == version and not _has_index(kind, url)


def test_rota_migrate_check_says_what_it_would_do_and_changes_nothing(
    older: tuple[str, str, int],
) -> None:
    kind, url, version = older
    result = rota("migrate", "--check", "--url", url)
    assert result.exit_code == 1, result.output
    assert f"at version {version}, this rota needs {version + 1}; migration {version + 1} " in (
        result.output
    )
    assert _version(kind, url) == version and not _has_index(kind, url)


def test_rota_migrate_migrates_an_older_store_saying_first_what_may_take_long(
    older: tuple[str, str, int],
) -> None:
    kind, url, version = older
    result = rota("migrate", "--url", url)
    assert result.exit_code == 0, result.output
    shown = redact_url(url)
    assert f"{shown}: migrated from version {version} to {version + 1}" in result.stdout
    notice = f"note: migration {version + 1} "
    assert notice in result.stderr and INDEX in result.stderr
    assert result.output.index(notice) < result.output.index("migrated from")
    assert _version(kind, url) == version + 1 and _has_index(kind, url)
    again = rota("migrate", "--url", url)
    assert again.exit_code == 0, again.output
    assert f"{shown}: already at version {version + 1}: nothing to migrate" in again.stdout
    assert rota("status", "--url", url).exit_code == 0


def test_rota_migrate_creates_a_store_that_does_not_exist(kind_url: tuple[str, str]) -> None:
    kind, url = kind_url
    with pytest.raises(MissingStore):
        open_store(url, must_exist=True)
    result = rota("migrate", "--url", url)
    assert result.exit_code == 0, result.output
    newest = newest_migration(f"rota.stores.{kind}")
    assert f"{redact_url(url)}: created the store at version {newest}" in result.stdout
    assert _version(kind, url) == newest and _has_index(kind, url)


def test_a_worker_or_a_sender_still_migrates_an_older_store(older: tuple[str, str, int]) -> None:
    """Workers, schedulers and `rota send` open the store without
    ``must_exist``: the store migrates as it always did."""
    kind, url, version = older
    app = App(url)
    app.task(name="ship")(lambda order: order)
    try:
        app.tasks["ship"].send(1)
    finally:
        app.close()
    assert _version(kind, url) == version + 1 and _has_index(kind, url)


def test_rota_migrate_on_redis_says_there_is_nothing_to_migrate(tmp_path: Path) -> None:
    pytest.importorskip("redis")
    url = store_url("redis", tmp_path)
    try:
        result = rota("migrate", "--url", url)
        assert result.exit_code == 0, result.output
        assert "nothing to migrate: a Redis store has no schema" in result.stdout
    finally:
        drop_store("redis", url)
