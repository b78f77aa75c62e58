"""SQLite reads jobs of one state through that state's own index: a claim
(and the wait before it) costs the same with 20 or 200,000 jobs scheduled
for later, not a walk over every scheduled job (its cost grew linearly
before the claim's statements named their index)."""

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


@pytest.mark.parametrize(("name", "index"), sorted(PLANS.items()))
def test_a_claim_statement_searches_its_state_index(tmp_path: Path, name: str, index: str) -> None:
    path = tmp_path / "plans.db"
    open_store(f"sqlite:///{path}").close()  # the schema, migrated
    conn = sqlite3.connect(path)
    try:
        conn.create_function("rota_now", 0, lambda: 0.0)
        sql = Q[name]
        plan = conn.execute(f"EXPLAIN QUERY PLAN {sql}", (0,) * sql.count("?")).fetchall()
    finally:
        conn.close()
    steps = [row[3] for row in plan]
    on_jobs = [step for step in steps if " jobs " in f" {step} "]
    assert on_jobs and all(f"USING INDEX {index}" in step for step in on_jobs), steps
