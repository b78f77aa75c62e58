"""MySQL / MariaDB pages one queue's jobs, newest first, through
``jobs_queue_seq`` and ``jobs_queue_state`` (the queries name them): a small
queue whose jobs are all older than other queues' reads its own newest
entries, neither walking the primary key backwards past every newer job nor
sorting (left to itself, MariaDB walked the primary key, or sorted an
intersection of two indexes: docs/performance.md)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest

MySQLdb = pytest.importorskip("MySQLdb")

from rota.stores import open_store  # noqa: E402
from rota.stores.mysql._tx import Q  # noqa: E402

#: Jobs of queue old, then NEW newer ones over queues new and mail.
OLD, NEW = 1_400, 40_000


def connect(url: str) -> Any:
    parts = urlsplit(url)
    return MySQLdb.connect(
        host=parts.hostname or "127.0.0.1",
        port=parts.port or 3306,
        user=unquote(parts.username or "root"),
        password=unquote(parts.password or ""),
        database=parts.path.strip("/"),
        autocommit=True,
    )


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A connection to a store holding OLD jobs of queue old, then NEW newer
    ones (one in seven of queue mail, the others of queue new), analysed."""
    from backends import drop_store, store_url

    url = store_url("mysql", tmp_path_factory.mktemp("plans"))
    try:
        open_store(url).close()
        conn = connect(url)
        digits = (
            "(SELECT 0 AS d UNION ALL "
            + " UNION ALL ".join(f"SELECT {d}" for d in range(1, 10))
            + ")"
        )
        numbers = (
            "SELECT a.d + 10 * b.d + 100 * c.d + 1000 * e.d + 10000 * f.d AS n"
            f" FROM {digits} a, {digits} b, {digits} c, {digits} e, {digits} f"
        )
        insert = (
            "INSERT INTO jobs (id, task, queue, state, payload, run_at, enqueued_at)"
            " SELECT CONCAT(%s, n), 't', IF(MOD(n, 7) = 0, %s, %s), 'queued', '{}', 0, 0"
            f" FROM ({numbers}) AS g WHERE n < %s ORDER BY n"
        )
        cursor = conn.cursor()
        cursor.execute(insert, ("old-", "old", "old", OLD))
        cursor.execute(insert, ("new-", "mail", "new", NEW))
        cursor.execute("ANALYZE TABLE jobs")
        cursor.fetchall()
        yield conn
        conn.close()
    finally:
        drop_store("mysql", url)


def explain(conn: Any, name: str, where: list[str], params: list[Any]) -> list[dict[str, Any]]:
    """EXPLAIN's rows for query ``name`` with the filter fragments ``where``."""
    sql = Q[name].format(where=" AND ".join(Q[fragment] for fragment in where) or "TRUE")
    cursor = conn.cursor()
    cursor.execute(f"EXPLAIN {sql}", params)
    columns = [column[0].lower() for column in cursor.description]
    return [dict(zip(columns, row, strict=True)) for row in cursor.fetchall()]


def reads(rows: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(index, extra) of each step that reads table jobs."""
    return [(row["key"], row["extra"] or "") for row in rows if row["table"] == "jobs"]


@pytest.mark.parametrize(
    ("name", "where", "params", "index"),
    [
        ("list_queue", [], ["old", 51], "jobs_queue_seq"),
        ("list_queue", ["before_seq"], ["old", OLD // 2, 51], "jobs_queue_seq"),
        ("list_queue", ["of_task"], ["old", "t", 51], "jobs_queue_seq"),
        ("list_queue_state", [], ["old", "queued", 51], "jobs_queue_state"),
        ("list_queue_state", [], ["new", "cancelled", 51], "jobs_queue_state"),
        ("list_queue_state", ["of_task"], ["old", "queued", "t", 51], "jobs_queue_state"),
    ],
)
def test_a_page_of_an_old_queue_reads_the_queues_index_without_a_sort(
    filled: Any, name: str, where: list[str], params: list[Any], index: str
) -> None:
    steps = explain(filled, name, where, params)
    found = reads(steps)
    assert [key for key, _ in found] == [index], steps
    assert "filesort" not in found[0][1], steps


def test_a_page_of_an_old_queues_queued_jobs_reads_each_states_newest_entries(
    filled: Any,
) -> None:
    """Each state's part reads jobs_queue_state without a sort; only the
    union of the parts' 51 rows each is sorted."""
    args = ["old", 51, "old", 51, "old", time.time(), 51, 51]
    steps = explain(filled, "list_queue_queued", [], args)
    found = reads(steps)
    assert [key for key, _ in found] == ["jobs_queue_state"] * 3, steps
    assert not [extra for _, extra in found if "filesort" in extra], steps
