"""SQLite reads jobs through the index that answers the statement: a claim
(and the wait before it) costs the same with 20 or 200,000 jobs scheduled
for later, not a walk over every scheduled job (its cost grew linearly
before the claim's statements named their index); a page of one queue's
jobs, newest first, reads that page, not a sort of the whole queue (0.2 s
with 415,000 jobs in the queue before ``jobs_queue_seq``)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from rota.stores import open_store
from rota.stores.sqlite._conn import Q

#: Named query -> the index its plan must search.
PLANS = {
    "promote_due": "jobs_due",
    "next_due": "jobs_due",
    "due_by_queue": "jobs_due",
    "ready_candidates": "jobs_ready",
}

#: The filter fragments of a ``list_jobs`` page -> the index that gives its
#: rows newest first, so that no sort of the matching jobs comes before it.
LIST_PLANS = {
    ("of_queue",): "jobs_queue_seq",
    ("of_queue", "before_seq"): "jobs_queue_seq",
    ("of_queue", "of_task"): "jobs_queue_seq",
    ("of_queue", "is_queued_by"): "jobs_queue_seq",
    ("of_queue", "in_state"): "jobs_queue_state",
    ("of_queue", "in_state", "before_seq"): "jobs_queue_state",
}


def plan_steps(tmp_path: Path, sql: str) -> list[str]:
    """The steps of ``sql``'s plan on a freshly migrated database."""
    path = tmp_path / "plans.db"
    open_store(f"sqlite:///{path}").close()  # the schema, migrated
    conn = sqlite3.connect(path)
    try:
        conn.create_function("rota_now", 0, lambda: 0.0)
        plan = conn.execute(f"EXPLAIN QUERY PLAN {sql}", (0,) * sql.count("?")).fetchall()
    finally:
        conn.close()
    return [row[3] for row in plan]


@pytest.mark.parametrize(("name", "index"), sorted(PLANS.items()))
def test_a_claim_statement_searches_its_state_index(tmp_path: Path, name: str, index: str) -> None:
    steps = plan_steps(tmp_path, Q[name])
    on_jobs = [step for step in steps if " jobs " in f" {step} "]
    assert on_jobs and all(f"USING INDEX {index}" in step for step in on_jobs), steps


@pytest.mark.parametrize(("where", "index"), sorted(LIST_PLANS.items()))
def test_a_page_of_a_queue_reads_its_index_newest_first_without_a_sort(
    tmp_path: Path, where: tuple[str, ...], index: str
) -> None:
    sql = Q["list_jobs"].format(where=" AND ".join(Q[fragment] for fragment in where))
    steps = plan_steps(tmp_path, sql)
    assert len(steps) == 1 and f"SEARCH jobs USING INDEX {index} " in steps[0], steps
