"""Every SQL statement of the stores lives in a named-query file, none in Python."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import rota.stores

STORES = Path(rota.stores.__file__).parent
# A statement's first word in any case; a clause keyword inside a string in
# capitals, as SQL is written here (English prose says "from" too).
SQL = re.compile(
    r"(?i:^\s*(SELECT|INSERT|UPDATE|DELETE|CREATE|DROP|ALTER|PRAGMA|BEGIN|COMMIT|ROLLBACK|"
    r"LISTEN|NOTIFY|WITH|SET)\s)|\s(FROM|WHERE|VALUES)\s"
)


def sql_literals(path: Path) -> list[str]:
    """String constants of ``path`` that read as SQL (docstrings aside)."""
    tree = ast.parse(path.read_text())
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        f"{path.name}:{node.lineno}: {node.value[:60]!r}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
        and SQL.search(node.value)
    ]


def test_the_pattern_finds_sql() -> None:
    assert SQL.search("SELECT 1")
    assert SQL.search("DELETE FROM jobs")
    assert SQL.search("x FROM y")
    assert not SQL.search("the store refused the jobs")


def test_no_sql_string_literal_under_stores() -> None:
    found = [hit for path in sorted(STORES.rglob("*.py")) for hit in sql_literals(path)]
    assert found == []
