"""Loads the SQLite store's schema migrations and named queries from .sql files."""

from __future__ import annotations

import re
from functools import cache
from importlib import resources

_NAME = re.compile(r"^-- name: (\w+)\s*$", re.MULTILINE)


@cache
def queries(file: str = "queries.sql") -> dict[str, str]:
    """Every named query of ``file`` (default ``queries.sql``), by name."""
    text = resources.files(__package__).joinpath(file).read_text()
    parts = _NAME.split(text)
    return {name: body.strip() for name, body in zip(parts[1::2], parts[2::2], strict=True)}


def migrations() -> list[tuple[int, str]]:
    """``(version, script)`` for every file of ``migrations/``, in order."""
    folder = resources.files(__package__).joinpath("migrations")
    found = []
    for entry in folder.iterdir():
        if entry.name.endswith(".sql"):
            found.append((int(entry.name.split("_", 1)[0]), entry.read_text()))
    return sorted(found)
