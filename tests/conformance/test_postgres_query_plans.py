"""PostgreSQL pages one queue's jobs, newest first, through ``jobs_queue_seq``:
a small queue whose jobs are all older than other queues' reads its own
newest jobs, neither sorting the queue nor walking the primary key backwards
past every newer job. (Where the statistics make a queue a few per cent of
the table, the planner may still walk the primary key: docs/performance.md.)"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

psycopg = pytest.importorskip("psycopg")

from backends import drop_store, pg_execute, store_url  # noqa: E402
from rota.stores import open_store  # noqa: E402
from rota.stores.postgres._tx import Q  # noqa: E402

#: Jobs of queue old, then of queue new, all enqueued after them.
OLD, NEW = 200, 40_000


@pytest.fixture
def pg_url(tmp_path: Path) -> Iterator[str]:
    url = store_url("postgres", tmp_path)
    yield url
    drop_store("postgres", url)


def fill(url: str) -> None:
    """The store's schema, OLD jobs of queue old and NEW newer ones of queue
    new, analysed."""
    open_store(url).close()
    insert = (
        "INSERT INTO jobs (id, task, queue, state, payload, run_at, enqueued_at)"
        " SELECT %s || g, 't', %s, 'queued', '\\x7b7d'::bytea, 0, 0"
        " FROM generate_series(1, %s) AS g"
    )
    pg_execute(url, insert, ("old-", "old", OLD))
    pg_execute(url, insert, ("new-", "new", NEW))
    pg_execute(url, "ANALYZE jobs")


def plan(url: str, where: list[str], params: list[Any]) -> dict[str, Any]:
    """The plan of a ``list_jobs`` page with the filter fragments ``where``."""
    sql = Q["list_jobs"].format(where=" AND ".join(Q[fragment] for fragment in where))
    schema = url.split("schema=", 1)[1]
    with psycopg.connect(url.split("?", 1)[0]) as conn:
        conn.execute(f"SET search_path = {schema}")
        row = conn.execute(f"EXPLAIN (FORMAT JSON) {sql}", [*params, 51]).fetchone()
    assert row is not None
    found = row[0]
    return dict(found[0] if isinstance(found, list) else json.loads(found)[0])


def nodes(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield node
    for child in node.get("Plans", ()):
        yield from nodes(child)


@pytest.mark.parametrize(
    ("where", "params"),
    [
        (["of_queue"], ["old"]),
        (["of_queue", "before_seq"], ["old", OLD // 2]),
        (["of_queue", "of_task"], ["old", "t"]),
    ],
)
def test_a_page_of_an_old_queue_reads_the_queue_index_backwards_without_a_sort(
    pg_url: str, where: list[str], params: list[Any]
) -> None:
    fill(pg_url)
    steps = list(nodes(plan(pg_url, where, params)["Plan"]))
    scans = [step for step in steps if step.get("Relation Name") == "jobs"]
    assert [(s["Node Type"], s.get("Index Name"), s.get("Scan Direction")) for s in scans] == [
        ("Index Scan", "jobs_queue_seq", "Backward")
    ], steps
    assert not [step for step in steps if step["Node Type"] == "Sort"], steps


def test_the_index_built_beforehand_is_taken_as_done_by_its_migration(pg_url: str) -> None:
    open_store(pg_url).close()
    pg_execute(pg_url, "DROP INDEX jobs_queue_seq")
    pg_execute(pg_url, "DELETE FROM schema_versions WHERE version = 5")
    pg_execute(pg_url, "CREATE INDEX CONCURRENTLY jobs_queue_seq ON jobs (queue, seq)")
    open_store(pg_url).close()
    assert pg_execute(pg_url, "SELECT 1 FROM schema_versions WHERE version = 5") == 1
