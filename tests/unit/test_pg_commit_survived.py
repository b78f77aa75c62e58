"""How the PostgreSQL store settles a commit that a lost connection cut off:
PostgreSQL's word on the transaction's id afterwards, trusted only where a
restart cannot have handed the id to another transaction."""

from __future__ import annotations

import pytest

pytest.importorskip("psycopg")

from rota.stores.postgres._outages import commit_survived


@pytest.mark.parametrize(
    ("state", "restarted", "survived"),
    [
        ("committed", False, True),
        ("aborted", False, False),
        ("in progress", False, None),  # a terminated backend still ending it: ask again
        ("future", False, False),
        (None, False, None),  # too old for the server to know
        # after a restart an id that no durable record mentions is handed out again
        ("committed", True, None),  # a durable commit, or another transaction's
        ("aborted", True, False),
        ("in progress", True, False),  # another transaction's: ours did not survive
        ("future", True, False),
        (None, True, None),
    ],
)
def test_a_cut_commit_is_settled_only_where_the_answer_is_about_it(
    state: str | None, restarted: bool, survived: bool | None
) -> None:
    assert commit_survived(state, restarted) is survived
