"""PostgreSQL pages one queue's jobs, newest first, through ``jobs_queue_seq``
and ``jobs_queue_state``: a small queue whose jobs are all older than other
queues' reads its own newest jobs, neither sorting the queue nor walking the
primary key backwards past every newer job, whatever share of the table the
statistics give it (with ``queue = ...`` and the order by seq alone, the
planner walked the primary key for a queue of a few per cent:
docs/performance.md)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

psycopg = pytest.importorskip("psycopg")

from backends import drop_store, pg_execute, store_url  # noqa: E402
from rota.stores import open_store  # noqa: E402
from rota.stores.postgres._tx import Q  # noqa: E402

#: Jobs of queue new, all enqueued after those of queue old.
NEW = 40_000
#: Jobs of queue old: 0.5 % and 3.4 % of the table (the planner walked the
#: primary key for the second before the queue's queries of their own).
OLD_SHARES = [200, 1_400]


@pytest.fixture
def pg_url(tmp_path: Path) -> Iterator[str]:
    url = store_url("postgres", tmp_path)
    yield url
    drop_store("postgres", url)


def fill(url: str, old: int) -> None:
    """The store's schema, ``old`` jobs of queue old and NEW newer ones, one
    in seven of queue mail and the others of queue new, analysed (queues
    interleaved in the table as sends make them: with the newer jobs in one
    block the planner took the queue's index even for ``queue = ...``)."""
    open_store(url).close()
    insert = (
        "INSERT INTO jobs (id, task, queue, state, payload, run_at, enqueued_at)"
        " SELECT %s || g, 't', CASE WHEN g %% 7 = 0 THEN %s ELSE %s END, 'queued',"
        " '\\x7b7d'::bytea, 0, 0 FROM generate_series(1, %s) AS g"
    )
    pg_execute(url, insert, ("old-", "old", "old", old))
    pg_execute(url, insert, ("new-", "mail", "new", NEW))
    pg_execute(url, "ANALYZE jobs")


def plan(url: str, name: str, where: list[str], params: list[Any]) -> dict[str, Any]:
    """The plan of query ``name`` with the filter fragments ``where``."""
    sql = Q[name].format(where=" AND ".join(Q[fragment] for fragment in where) or "TRUE")
    schema = url.split("schema=", 1)[1]
    with psycopg.connect(url.split("?", 1)[0]) as conn:
        conn.execute(f"SET search_path = {schema}")
        row = conn.execute(f"EXPLAIN (FORMAT JSON) {sql}", params).fetchone()
    assert row is not None
    found = row[0]
    return dict(found[0] if isinstance(found, list) else json.loads(found)[0])


def nodes(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield node
    for child in node.get("Plans", ()):
        yield from nodes(child)


def scans(steps: list[dict[str, Any]]) -> list[tuple[str, str | None, str | None]]:
    return [
        (step["Node Type"], step.get("Index Name"), step.get("Scan Direction"))
        for step in steps
        if step.get("Relation Name") == "jobs"
    ]


#: (query, filter fragments, parameters, the index its page reads)
PAGES = [
    ("list_queue", [], ["old", 51], "jobs_queue_seq"),
    ("list_queue", ["of_task"], ["old", "t", 51], "jobs_queue_seq"),
    ("list_queue_state", [], ["old", "queued", 51], "jobs_queue_state"),
    ("list_queue_state", ["of_task"], ["old", "queued", "t", 51], "jobs_queue_state"),
]


@pytest.mark.parametrize(
    ("old", "name", "where", "params", "index"),
    [
        *[(old, *page) for old in OLD_SHARES for page in PAGES],
        # a later page (where only old jobs are below the cursor, a range of
        # the primary key below it, sorted, may cost as little)
        (200, "list_queue", ["before_seq"], ["old", 100, 51], "jobs_queue_seq"),
    ],
)
def test_a_page_of_an_old_queue_reads_the_queue_index_backwards_without_a_sort(
    pg_url: str, old: int, name: str, where: list[str], params: list[Any], index: str
) -> None:
    fill(pg_url, old)
    steps = list(nodes(plan(pg_url, name, where, params)["Plan"]))
    assert scans(steps) == [("Index Scan", index, "Backward")], steps
    assert not [step for step in steps if step["Node Type"] == "Sort"], steps


@pytest.mark.parametrize("old", OLD_SHARES)
def test_a_page_of_an_old_queues_queued_jobs_reads_each_states_newest_entries(
    pg_url: str, old: int
) -> None:
    """Each state's part reads an index backwards (jobs_queue_state for the
    queue's queued jobs; the planner may read a state no job is in from
    jobs_state_seq), never the primary key; the one sort merges the parts'
    51 rows each."""
    fill(pg_url, old)
    args = ["old", 51, "old", 51, "old", time.time(), 51, 51]
    top = plan(pg_url, "list_queue_queued", [], args)["Plan"]
    steps = list(nodes(top))
    found = scans(steps)
    assert found[0] == ("Index Scan", "jobs_queue_state", "Backward"), steps
    assert len(found) == 3, steps
    assert all(kind == "Index Scan" and way == "Backward" for kind, _, way in found), steps
    assert "jobs_pkey" not in {index for _, index, _ in found}, steps
    sorts = [step for step in steps if step["Node Type"] == "Sort"]
    assert len(sorts) == 1 and sorts[0]["Plans"][0]["Node Type"] == "Append", steps


def test_the_index_built_beforehand_is_taken_as_done_by_its_migration(pg_url: str) -> None:
    open_store(pg_url).close()
    pg_execute(pg_url, "DROP INDEX jobs_queue_seq")
    pg_execute(pg_url, "DELETE FROM schema_versions WHERE version = 5")
    pg_execute(pg_url, "CREATE INDEX CONCURRENTLY jobs_queue_seq ON jobs (queue, seq)")
    open_store(pg_url).close()
    assert pg_execute(pg_url, "SELECT 1 FROM schema_versions WHERE version = 5") == 1
